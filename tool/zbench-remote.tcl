# zbench-remote.tcl -- a cold random epoch of a dataset served over http,
# for issue 28's remote figure (doc/benchmarks.md): for each NAME, an empty
# chunk cache, then every BYTES/TEXT field of every sample read in copy mode,
# in batches of 64 along pagedb_order random (seed 1); prints the samples,
# their bytes, the wall time and what pagedb_remote_stats counted (requests,
# bytes fetched, chunks).  Figures, never a test.
#
#   PAGEDB_TCLLIB=build/test/.libs/libtclpagedb.so \
#     tclsh tool/zbench-remote.tcl PORT CACHEDIR NAME ...
#
# NAME is a dataset under http://127.0.0.1:PORT/ (test/nginx.sh serves a
# directory; pagedb-zbench with ZBENCH_KEEP=1 leaves its datasets).
load $env(PAGEDB_TCLLIB) Tclpagedb
lassign $argv port cache
foreach name [lrange $argv 2 end] {
  file delete -force $cache
  set env(PAGEDB_CACHE_DIR) $cache
  set s0 [pagedb_remote_stats]
  set t0 [clock microseconds]
  pagedb R http://127.0.0.1:$port/$name -readonly
  set ids [R order random -seed 1]
  set fields {}
  foreach f [R fields] { if {[lindex $f 1] in {bytes text}} { lappend fields [lindex $f 0] } }
  R reader r -copy
  set bytes 0
  for {set i 0} {$i < [llength $ids]} {incr i 64} {
    set b [lrange $ids $i [expr {$i + 63}]]
    foreach f $fields { foreach v [r read_batch $b $f] { incr bytes [string length $v] } }
  }
  r close
  R close
  set t [expr {([clock microseconds] - $t0) / 1e6}]
  set s1 [pagedb_remote_stats]
  set got {}
  foreach k {requests bytes chunk_fetches} { lappend got $k [expr {[dict get $s1 $k] - [dict get $s0 $k]}] }
  puts [format "%-24s samples %d, sample bytes %d, %.2f s, %s" $name [llength $ids] $bytes $t $got]
}
