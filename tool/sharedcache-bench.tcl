# sharedcache-bench.tcl -- what the shared cache's checks cost (issue 30,
# doc/benchmarks.md): a dataset of N samples served by nginx (test/nginx.sh,
# started here on a free loopback port and stopped at the end), read as a
# cold epoch (an empty cache) and then a warm one (every chunk cached), each
# in a private cache, in a private cache read with PAGEDB_READ_VERIFY
# ("verify": every value's XXH3 checked, what a shared cache forces) and in
# a shared one (PAGEDB_CACHE_SHARED=1: a set-group-ID directory of this
# user's group; every chunk sealed, named by a keyed hash and checked at
# every hold; the index and catalog fetched into memory at each open;
# every value verified), rotating which goes first from round to round.  An epoch opens the dataset and reads every sample's
# bytes in copy mode, in batches of 64 along pagedb_order random (seed 1).
# Prints each epoch (seconds, MB/s, requests, chunks fetched and found) and
# the medians with the ratios to the private cache's.  Figures, never a test.
#
#   PAGEDB_TCLLIB=build/test/.libs/libtclpagedb.so \
#     tclsh tool/sharedcache-bench.tcl [N [MAXBYTES [ROUNDS [DIR]]]]
#
# N samples (default 20000) of 1..MAXBYTES random bytes (default 16000);
# ROUNDS (default 3); DIR a scratch directory (default a new one in /tmp,
# removed at the end).
load $env(PAGEDB_TCLLIB) Tclpagedb
lassign $argv n maxb rounds dir
if {$n eq ""} { set n 20000 }
if {$maxb eq ""} { set maxb 16000 }
if {$rounds eq ""} { set rounds 3 }
set own [expr {$dir eq ""}]
if {$own} { set dir [exec mktemp -d /tmp/pagedb-scbench.XXXXXX] }
set here [file dirname [file normalize [info script]]]
set nginx [file join $here .. test nginx.sh]
foreach v [array names env] {
  if {[string match PAGEDB_CACHE_* $v] || [string match PAGEDB_REMOTE_* $v]} { unset env($v) }
}

file mkdir $dir/ngx/www
set ds $dir/ngx/www/ds.pagedb
pagedb D $ds -create
D field_add img bytes
D ingest -count $n -min 1 -max $maxb -seed 1
D close
set port [exec sh $nginx start $dir/ngx [pid]]
set url http://127.0.0.1:$port/ds.pagedb

# One epoch with cache CACHE, shared or not, its reader verifying or not:
# {seconds bytes requests fetched hits forged}.
proc epoch {cache shared verify} {
  set ::env(PAGEDB_CACHE_DIR) $cache
  set ::env(PAGEDB_CACHE_SHARED) $shared
  set s0 [pagedb_remote_stats]
  set t0 [clock microseconds]
  pagedb R $::url -readonly
  set ids [R order random -seed 1]
  if {$verify} { R reader r -copy -verify } else { R reader r -copy }
  set bytes 0
  for {set i 0} {$i < [llength $ids]} {incr i 64} {
    foreach v [r read_batch [lrange $ids $i [expr {$i + 63}]] img] { incr bytes [string length $v] }
  }
  r close
  R close
  set t [expr {([clock microseconds] - $t0) / 1e6}]
  set s1 [pagedb_remote_stats]
  set r [list $t $bytes]
  foreach k {requests chunk_fetches chunk_hits chunk_forged} { lappend r [expr {[dict get $s1 $k] - [dict get $s0 $k]}] }
  return $r
}

# An empty cache directory for MODE.
proc fresh {mode} {
  set c $::dir/cache-$mode
  file delete -force $c
  file mkdir $c
  if {$mode eq "shared"} {
    file attributes $c -permissions 02770
  } else {
    file attributes $c -permissions 0700
  }
  return $c
}

proc median {l} { lindex [lsort -real $l] [expr {[llength $l] / 2}] }

puts [format "dataset: %d samples of 1..%d bytes, %.1f MB on disk, over nginx at %s; %d rounds" $n $maxb \
    [expr {[file size $ds] / 1e6}] $url $rounds]
set T {}
for {set r 0} {$r < $rounds} {incr r} {
  set modes {private verify shared}
  set order [concat [lrange $modes [expr {$r % 3}] end] [lrange $modes 0 [expr {$r % 3 - 1}]]]
  foreach mode $order {
    set c [fresh $mode]
    set sh [expr {$mode eq "shared"}]
    foreach phase {cold warm} {
      lassign [epoch $c $sh [expr {$mode eq "verify"}]] t bytes req fetched hits forged
      dict lappend T $mode,$phase $t
      puts [format "round %d %-7s %-4s %6.3f s  %7.1f MB/s  requests %5d  fetched %4d  hits %5d  forged %d" $r $mode \
          $phase $t [expr {$bytes / $t / 1e6}] $req $fetched $hits $forged]
    }
  }
}
foreach phase {cold warm} {
  set p [median [dict get $T private,$phase]]
  set v [median [dict get $T verify,$phase]]
  set s [median [dict get $T shared,$phase]]
  puts [format "median %s epoch: private %.3f s, verify %.3f s (%.2fx), shared %.3f s (%.2fx)" $phase $p $v \
      [expr {$v / $p}] $s [expr {$s / $p}]]
}
catch {exec sh $nginx stop $dir/ngx}
if {$own} { file delete -force $dir }
