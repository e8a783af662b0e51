# mkcorpus.tcl -- rebuild test/corpus/, the bad-input regression corpus.
#
#     make corpus          (or: tclsh test/mkcorpus.tcl in a built tree)
#
# It needs the Tcl sqlite3 package (Debian libsqlite3-tcl, which
# tool/install-deps.sh installs) to write the catalogs' faults.
#
# Four small datasets are made with the library (page size 64 KiB, the
# smallest): "base" (four fields, lz4 text, 6 samples in two runs), "other"
# (the same schema, other bytes), "empty" (a header and a catalog) and
# "bomb" (one 4 MiB value of zeros that lz4 stores in 16 KiB).  Their uuids
# and creation times are then set to fixed values and their catalogs
# rewritten with 1 KiB SQLite pages (VACUUM), so that the files are small and
# the same at every run with the same SQLite.  Each case of the corpus is a
# copy of one of them with one fault (a patched byte range, a truncation, a
# catalog statement), listed in test/corpus/MANIFEST with the one result
# code every step named for it must give.  test/corpus.test reads the
# committed files, never this script: rerun it only when the format changes,
# and review the diff of MANIFEST.
#
# MANIFEST lines (Tcl lists; '#' starts a comment):
#   params VERIFY-OPTIONS          what `DB verify` needs to check base's samples
#   NAME CODE STEPS DATA CATALOG SIDE WHAT
# DATA, CATALOG and SIDE name files of test/corpus/ ("-": no such file) that
# the test copies to NAME, NAME-catalog and, for SIDE X-wal, X-shm or
# X-journal, NAME-catalog-wal, -shm or -journal, for SIDE X-index,
# NAME-index (the index file).  STEPS are those of corpus.test (open rw
# read verify good rwgood check quick mapped scan rebuilt ixcheck).
#
# The datasets' index files are made again after their identity is fixed
# (a read-write open rebuilds them), with a fixed file id, so that they and
# the catalogs that name them are the same at every run too.  Files named
# legacy-* are kept as they are: datasets of an earlier format, which this
# pagedb cannot make any more but must keep opening.

source [file join [file dirname [info script]] tester.tcl]
package require sqlite3

set OUT [file join $::TC(srcdir) corpus]
set P 65536
set D 65536                     ;# page 0's offset: min(page size, 2 MiB)
set FIELDS {{img bytes} {txt text lz4} {n int} {x real}}
set SIZES {300 1200 0 -1 700}
set GEN [list -text -seed 7 -sizes $SIZES]
set CREATED 1767225600          ;# 2026-01-01, the creation time of every file

proc hex16 {n} { return [format %032x $n] }

# Give dataset PATH the uuid UUIDHEX and the fixed creation time: in its
# header, in every run header (each with its checksum) and in meta.
proc set_identity {path uuidhex} {
  set uuid [binary format H* $uuidhex]
  patch_file $path 32 $uuid
  patch_file $path 48 [binary format w $::CREATED]
  fix_header_checksum $path
  sqlite3 cdb $path-catalog
  foreach {pgno used} [cdb eval {SELECT pgno, used FROM page WHERE used > 0}] {
    set at [expr {$::D + $pgno * $::P}]
    patch_file $path [expr {$at + 8}] $uuid
    patch_file $path [expr {$at + 56}] [u64_to_bytes [pdb_checksum [read_bytes $path $at 56]]]
  }
  cdb eval {UPDATE meta SET value = $uuidhex WHERE key = 'uuid'}
  cdb close
}

# Rewrite catalog PATH compactly (1 KiB pages, no free pages), in WAL mode
# as pagedb leaves it, with no -wal or -shm beside it.
proc finish_catalog {path} {
  sqlite3 cdb $path
  cdb eval {PRAGMA journal_mode=DELETE}
  cdb eval {PRAGMA page_size=1024}
  cdb eval {VACUUM}
  cdb eval {PRAGMA journal_mode=WAL}
  cdb close
  file delete -force $path-wal $path-shm
}

# Make dataset NAME in the scratch directory with FIELDS, run SCRIPT with it
# open as gdb, close it and fix its identity.
proc make_dataset {name fields uuid script} {
  set path [testpath $name]
  make_db gdb $path $fields -pagesize $::P
  uplevel 1 $script
  gdb close
  set_identity $path [hex16 $uuid]
  finish_catalog $path-catalog
  fix_index $path $uuid
  return $path
}

# Make dataset PATH's index file again (its header has the uuid of before
# set_identity) and give it the fixed id ID, in its header (with the
# header's checksum) and in the catalog's meta.index_id.
proc fix_index {path id} {
  file delete -force $path-index $path-index.new
  pagedb gdb $path
  gdb close
  patch_file $path-index 48 [u64_to_bytes $id]
  patch_file $path-index 56 [u64_to_bytes [pdb_checksum [read_bytes $path-index 0 56]]]
  sqlite3 cdb $path-catalog
  cdb eval {UPDATE meta SET value = $id WHERE key = 'index_id'}
  cdb close
  finish_catalog $path-catalog
}

set base [make_dataset base $FIELDS 0x1111 { gdb ingest -count 6 {*}$GEN -flushevery 3 }]
set other [make_dataset other $FIELDS 0x2222 {
  gdb ingest -count 6 -text -seed 8 -sizes $SIZES -flushevery 3
}]
set empty [make_dataset empty $FIELDS 0x3333 {}]
set bomb [make_dataset bomb {{txt text lz4}} 0x4444 {
  gdb writer w
  w begin 0
  w put txt [binary format x[expr {4 << 20}]]
  w end
  w close
}]

# Keep the legacy-* files (see above); everything else is made again.
set LEGACY {}
foreach f [glob -nocomplain -directory $OUT legacy-*] {
  set fd [open $f rb]
  lappend LEGACY [file tail $f] [read $fd]
  close $fd
}
file delete -force $OUT
file mkdir $OUT
foreach {name bytes} $LEGACY {
  set fd [open [file join $OUT $name] wb]
  puts -nonewline $fd $bytes
  close $fd
}
set MANIFEST {}

# A file of the corpus: a copy of SRC (a scratch path) named NAME.
proc emit {name src} {
  file copy -force $src [file join $::OUT $name]
  return $name
}
proc out {name} { return [file join $::OUT $name] }

foreach ds {base other empty bomb} {
  emit $ds [testpath $ds]
  emit $ds-catalog [testpath $ds]-catalog
}
emit base-index [testpath base]-index
emit other-index [testpath other]-index

proc case {name code steps data catalog wal what} {
  lappend ::MANIFEST [list $name $code $steps $data $catalog $wal $what]
}

# Catalog case NAME: a copy of DS's catalog changed by SQL.
proc cat_case {name ds sql} {
  set f [out $name-catalog]
  file copy -force [out $ds-catalog] $f
  sqlite3 cdb $f
  cdb eval $sql
  cdb close
  finish_catalog $f
  return $name-catalog
}

# Data case NAME: a copy of DS's data file changed by SCRIPT, which sees its
# path as $f.
proc data_case {name ds script} {
  set f [out $name]
  file copy -force [out $ds] $f
  uplevel 1 [list set f $f]
  uplevel 1 $script
  return $name
}

# Where a value of base lies in its data file, from the catalog: the file
# offset and length of the stored bytes of field FIELD of sample ID.
proc extent_at {id field} {
  set id [expr {int($id)}]
  set field [expr {int($field)}]
  sqlite3 cdb [out base-catalog]
  lassign [cdb eval {SELECT page, off, len FROM extent WHERE id = $id AND field = $field}] page off len
  cdb close
  return [list [expr {$::D + $page * $::P + $off}] $len]
}
proc run_at {pgno} {
  set pgno [expr {int($pgno)}]
  sqlite3 cdb [out base-catalog]
  set used [cdb eval {SELECT used FROM page WHERE pgno = $pgno}]
  cdb close
  return [list [expr {$::D + $pgno * $::P}] $used]
}

proc set_header {f off bytes} {
  patch_file $f $off $bytes
  fix_header_checksum $f
}

# SQLite's WAL checksum of DATA (32-bit words of the byte order BIG) from
# S0 S1, as in its wal.c.
proc walsum {data s0 s1 big} {
  binary scan $data [expr {$big ? "Iu*" : "iu*"}] words
  foreach {a b} $words {
    set s0 [expr {($s0 + $a + $s1) & 0xffffffff}]
    set s1 [expr {($s1 + $b + $s0) & 0xffffffff}]
  }
  return [list $s0 $s1]
}

# Give WAL file PATH fixed salts (SQLite draws them at random), with the
# checksums of its header and of every frame made again.
proc fix_wal_salts {path} {
  set w [read_bytes $path 0 [file size $path]]
  binary scan $w IuIuIu magic version psize
  set big [expr {$magic & 1}]
  set salts [binary format II 0x5a17 0x5a18]
  set hdr [string range $w 0 15]$salts
  set sum [walsum $hdr 0 0 $big]
  set out $hdr[binary format II {*}$sum]
  for {set at 32} {$at + 24 + $psize <= [string length $w]} {incr at [expr {24 + $psize}]} {
    set fh [string range $w $at [expr {$at + 7}]]
    set page [string range $w [expr {$at + 24}] [expr {$at + 24 + $psize - 1}]]
    set sum [walsum $fh$page {*}$sum $big]
    append out $fh$salts[binary format II {*}$sum]$page
  }
  set fd [open $path wb]
  puts -nonewline $fd $out
  close $fd
}

# --- controls: the datasets as made ------------------------------------------

case base PAGEDB_OK {open rw read verify good rwgood check quick} base base-catalog - {the base dataset, whole}
case empty PAGEDB_OK {open rw check} empty empty-catalog - {an empty dataset: header and catalog}
case bomb PAGEDB_OK {read verify check} bomb bomb-catalog - {4 MiB of zeros stored as 16 KiB of lz4}
case legacy-base PAGEDB_OK {open rw read verify good rwgood check quick scan rebuilt} legacy-base legacy-base-catalog - \
  {base as the format before the index file and alignments made it (no index_* keys, no column field.align)}

# --- the header (of the empty dataset) ----------------------------------------

set steps {open rw check}
case hdr-magic PAGEDB_NOTADB $steps [data_case hdr-magic empty { patch_file $f 0 X }] \
  empty-catalog - {the magic's first byte changed}
case hdr-version-future PAGEDB_NOTADB_VERSION $steps \
  [data_case hdr-version-future empty { set_header $f 16 [binary format i 3] }] empty-catalog - \
  {format version 3, checksum fixed}
case hdr-version-1 PAGEDB_NOTADB_VERSION $steps \
  [data_case hdr-version-1 empty { set_header $f 16 [binary format i 1] }] empty-catalog - \
  {format version 1, before checksums and codecs}
case hdr-checksum PAGEDB_CORRUPT_HEADER $steps [data_case hdr-checksum empty { flip_byte $f 40 }] \
  empty-catalog - {a flipped byte in the uuid: the header checksum fails}
case hdr-torn PAGEDB_CORRUPT_HEADER $steps \
  [data_case hdr-torn empty { patch_file $f 64 [binary format x64] }] empty-catalog - \
  {bytes 64..127 never written (zero): a torn header write}
foreach {name v what} {
  0 0 {page size 0}
  odd 100000 {page size 100000, not a power of two}
  small 4096 {page size 4 KiB, below the 64 KiB minimum}
  huge 1099511627776 {page size 1 TiB, above the 1 GiB maximum}
  max64 -1 {page size 2^64-1}
} {
  case hdr-pagesize-$name PAGEDB_CORRUPT_HEADER $steps \
    [data_case hdr-pagesize-$name empty { set_header $f 24 [binary format w $v] }] empty-catalog - $what
}
case hdr-pagesize-other PAGEDB_CORRUPT_HEADER $steps \
  [data_case hdr-pagesize-other empty { set_header $f 24 [binary format w 131072] }] empty-catalog - \
  {page size 128 KiB, valid, but the catalog says 64 KiB}
case hdr-dataoff-odd PAGEDB_CORRUPT_HEADER $steps \
  [data_case hdr-dataoff-odd empty { set_header $f 56 [binary format w 5000] }] empty-catalog - \
  {page 0 at offset 5000, not a multiple of 4096}
case hdr-dataoff-big PAGEDB_CORRUPT_HEADER $steps \
  [data_case hdr-dataoff-big empty { set_header $f 56 [binary format w [expr {2 * $P}]] }] empty-catalog - \
  {page 0 at twice the page size}
case hdr-dataoff-huge PAGEDB_CORRUPT_HEADER $steps \
  [data_case hdr-dataoff-huge empty { set_header $f 56 [binary format w -4096] }] empty-catalog - \
  {page 0 at offset 2^64-4096}
case hdr-size PAGEDB_CORRUPT_HEADER $steps \
  [data_case hdr-size empty { set_header $f 20 [binary format i 8192] }] empty-catalog - \
  {header size 8192}
case hdr-uuid PAGEDB_NOTADB_MISMATCH $steps \
  [data_case hdr-uuid empty { set_header $f 32 [binary format H* [hex16 0x9999]] }] empty-catalog - \
  {another uuid, checksum fixed: the catalog belongs to another data file}

# --- truncation and trailing bytes (of base) -------------------------------------

foreach {name size code what} [list \
  0 0 PAGEDB_NOTADB {an empty data file} \
  64 64 PAGEDB_NOTADB {64 bytes: shorter than the checksummed header} \
  mid-header 2000 PAGEDB_CORRUPT_TRUNCATED {cut inside the 4 KiB header} \
  header 4096 PAGEDB_CORRUPT_TRUNCATED {the header alone, two runs committed} \
  hole [expr {$D - 100}] PAGEDB_CORRUPT_TRUNCATED {cut before page 0} \
  mid-page [expr {$D + 500}] PAGEDB_CORRUPT_TRUNCATED {cut inside the first run} \
  mid-prefix [expr {$D + $P + 100}] PAGEDB_CORRUPT_TRUNCATED {cut inside the last committed run} \
  last-byte [expr {[file size $base] - 1}] PAGEDB_CORRUPT_TRUNCATED {the last written byte missing}] {
  case trunc-$name $code {open rw} [data_case trunc-$name base { truncate_file $f $size }] \
    base-catalog - $what
}
case trailing-garbage PAGEDB_OK {good rwgood check} \
  [data_case trailing-garbage base {
    set fd [open $f ab]
    puts -nonewline $fd [pagedb_testdata 99 70000 5]
    close $fd
  }] base-catalog - {70000 bytes of garbage after the committed prefix: ignored, discarded by a read-write open}
case trailing-run PAGEDB_OK {good rwgood check} \
  [data_case trailing-run base {
    lassign [run_at 0] at used
    patch_file $f [expr {$D + 2 * $P}] [read_bytes $f $at $used]
  }] base-catalog - {a copy of run 0 at page 2, past the committed prefix: never read}

# --- pages (of base) -------------------------------------------------------------

lassign [extent_at 0 0] at len
case page-extent-bit PAGEDB_CORRUPT {verify check} \
  [data_case page-extent-bit base { flip_byte $f [expr {$at + $len / 2}] }] base-catalog - \
  {a flipped byte in sample 0's img: verified reads and the check fail}
lassign [run_at 1] at used
case page-runhdr-bit PAGEDB_CORRUPT {check quick} \
  [data_case page-runhdr-bit base { flip_byte $f [expr {$at + 24}] }] base-catalog - \
  {a flipped byte in run 1's page number: its header checksum fails}
case page-runhdr-used PAGEDB_CORRUPT {check quick} \
  [data_case page-runhdr-used base {
    patch_file $f [expr {$at + 40}] [binary format w [expr {3 * $P}]]
    patch_file $f [expr {$at + 56}] [u64_to_bytes [pdb_checksum [read_bytes $f $at 56]]]
  }] base-catalog - {run 1's header says 3 pages of bytes used, in a 1-page run (checksum fixed)}
case page-run-data PAGEDB_CORRUPT {check} \
  [data_case page-run-data base { flip_byte $f [expr {$at + $used - 1}] }] base-catalog - \
  {a flipped byte in run 1's last used byte: its data checksum fails}
lassign [extent_at 0 1] at len
case page-lz4-damaged PAGEDB_CORRUPT {read verify check} \
  [data_case page-lz4-damaged base { patch_file $f $at [string repeat \xff $len] }] base-catalog - \
  {sample 0's compressed txt overwritten with 0xff: lz4 refuses it}
lassign [run_at 0] at0 used0
lassign [run_at 1] at1 used1
case page-swapped PAGEDB_CORRUPT {verify check} \
  [data_case page-swapped base {
    set r0 [read_bytes $f $at0 $used0]
    set r1 [read_bytes $f $at1 $used1]
    patch_file $f $at0 $r1
    patch_file $f $at1 $r0
  }] base-catalog - {runs 0 and 1 swapped: pages in the wrong place}
case page-foreign PAGEDB_CORRUPT {verify check} \
  [data_case page-foreign base {
    patch_file $f $at1 [read_bytes [out other] $at1 $P]
  }] base-catalog - {run 1 copied from another dataset}

# --- compressed values ------------------------------------------------------------

sqlite3 cdb [out bomb-catalog]
set bombz [cdb eval {SELECT "txt:z" FROM sample WHERE id = 0}]
cdb close
case lz4-raw-false PAGEDB_CORRUPT {read verify check} base \
  [cat_case lz4-raw-false base {UPDATE sample SET txt = txt + 1 WHERE id = 0}] - \
  {sample 0's txt: a raw length one more than lz4 gives}
case bomb-raw-small PAGEDB_CORRUPT {read verify check} bomb \
  [cat_case bomb-raw-small bomb "UPDATE sample SET txt = $bombz + 1 WHERE id = 0"] - \
  {the lz4 bomb with a raw length just above its stored one: decompression stops there}
case bomb-raw-huge PAGEDB_CORRUPT_CATALOG {open rw} bomb \
  [cat_case bomb-raw-huge bomb {UPDATE sample SET txt = 68719476736 WHERE id = 0}] - \
  {the lz4 bomb claiming 64 GiB: more than lz4 can expand its bytes to}
case bomb-raw-2g PAGEDB_CORRUPT_CATALOG {open rw} bomb \
  [cat_case bomb-raw-2g bomb {UPDATE sample SET txt = 2147483648 WHERE id = 0}] - \
  {the lz4 bomb claiming 2 GiB: more than lz4 can expand its bytes to}

# --- catalogs (of base) ------------------------------------------------------------

set steps {open rw}
set fd [open [out notsqlite-catalog] wb]
puts -nonewline $fd [pagedb_testdata 3 5000 3]
close $fd
case cat-not-sqlite PAGEDB_NOTADB $steps base notsqlite-catalog - {5000 bytes of garbage}
close [open [out zero-catalog] wb]
case cat-empty PAGEDB_CORRUPT_CATALOG $steps base zero-catalog - {an empty file: SQLite sees no tables}
case cat-missing PAGEDB_CANTOPEN $steps base - - {no catalog beside the data file}
case cat-no-data PAGEDB_CANTOPEN_NOENT $steps - base-catalog - {a catalog without its data file}
case cat-other PAGEDB_NOTADB_MISMATCH $steps base other-catalog - {the catalog of another dataset}

foreach {name code what sql} {
  drop-page PAGEDB_CORRUPT_CATALOG {table page missing} {DROP TABLE page}
  drop-meta PAGEDB_CORRUPT_CATALOG {table meta missing} {DROP TABLE meta}
  trigger PAGEDB_CORRUPT_CATALOG {a trigger on sample}
    {CREATE TRIGGER t AFTER INSERT ON sample BEGIN DELETE FROM page; END}
  view PAGEDB_CORRUPT_CATALOG {an extra view} {CREATE VIEW v AS SELECT 1}
  view-extent PAGEDB_CORRUPT_CATALOG {view extent made again, running other SQL}
    {DROP VIEW extent; CREATE VIEW extent AS WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT i FROM r}
  view-missing PAGEDB_CORRUPT_CATALOG {view extent dropped} {DROP VIEW extent}
  index PAGEDB_CORRUPT_CATALOG {an extra index} {CREATE INDEX i ON sample(page)}
  table PAGEDB_CORRUPT_CATALOG {an extra table with pagedb's reserved prefix (other tables are user tables)}
    {CREATE TABLE pagedb_extra(x)}
  column PAGEDB_CORRUPT_CATALOG {an extra column in sample} {ALTER TABLE sample ADD COLUMN junk}
  coltype PAGEDB_CORRUPT_CATALOG {sample.page declared TEXT}
    {PRAGMA writable_schema=ON;
     UPDATE sqlite_schema SET sql = replace(sql, 'page INTEGER NOT NULL', 'page TEXT NOT NULL') WHERE name = 'sample'}
  pagecoltype PAGEDB_CORRUPT_CATALOG {page.used declared BLOB}
    {PRAGMA writable_schema=ON;
     UPDATE sqlite_schema SET sql = replace(sql, 'used INTEGER NOT NULL', 'used BLOB NOT NULL') WHERE name = 'page'}
  dup-ids PAGEDB_CORRUPT_CATALOG {sample.id not the rowid, and id 2 twice}
    {PRAGMA writable_schema=ON;
     UPDATE sqlite_schema SET sql = replace(sql, 'id INTEGER PRIMARY KEY', 'id INTEGER') WHERE name = 'sample'}
  id-negative PAGEDB_CORRUPT_CATALOG {sample id -5} {UPDATE sample SET id = -5 WHERE id = 5}
  id-min PAGEDB_CORRUPT_CATALOG {sample id -2^63} {UPDATE sample SET id = -9223372036854775808 WHERE id = 5}
  off-negative PAGEDB_CORRUPT_CATALOG {a negative offset} {UPDATE sample SET off = -5 WHERE id = 3}
  off-huge PAGEDB_CORRUPT_CATALOG {offset 2^63-1} {UPDATE sample SET off = 9223372036854775807 WHERE id = 3}
  off-page PAGEDB_CORRUPT_CATALOG {offset 65536, past its page} {UPDATE sample SET off = 65536 WHERE id = 3}
  page-huge PAGEDB_CORRUPT_CATALOG {page 2^63-1} {UPDATE sample SET page = 9223372036854775807 WHERE id = 4}
  page-2-62 PAGEDB_CORRUPT_CATALOG {page 2^62: page times page size overflows}
    {UPDATE sample SET page = 4611686018427387904 WHERE id = 4}
  page-negative PAGEDB_CORRUPT_CATALOG {page -1} {UPDATE sample SET page = -1 WHERE id = 4}
  page-norun PAGEDB_CORRUPT_CATALOG {page 2, past the committed pages} {UPDATE sample SET page = 2 WHERE id = 4}
  page-text PAGEDB_CORRUPT_CATALOG {page 'x'} {UPDATE sample SET page = 'x' WHERE id = 4}
  len-huge PAGEDB_CORRUPT_CATALOG {img length 2^63-1} {UPDATE sample SET img = 9223372036854775807 WHERE id = 0}
  len-page PAGEDB_CORRUPT_CATALOG {img length 65537, more than a page} {UPDATE sample SET img = 65537 WHERE id = 0}
  len-negative PAGEDB_CORRUPT_CATALOG {img length -3} {UPDATE sample SET img = -3 WHERE id = 0}
  len-real PAGEDB_CORRUPT_CATALOG {img length 300.5} {UPDATE sample SET img = 300.5 WHERE id = 0}
  overlap PAGEDB_CORRUPT_CATALOG {sample 1's record moved onto sample 0's}
    {UPDATE sample SET page = (SELECT page FROM sample WHERE id = 0), off = (SELECT off FROM sample WHERE id = 0) WHERE id = 1}
  sum-missing PAGEDB_CORRUPT_CATALOG {img:sum NULL} {UPDATE sample SET "img:sum" = NULL WHERE id = 0}
  z-nocodec PAGEDB_CORRUPT_CATALOG {img:z set, img has no codec} {UPDATE sample SET "img:z" = 10 WHERE id = 0}
  z-ge-raw PAGEDB_CORRUPT_CATALOG {txt:z not below txt} {UPDATE sample SET "txt:z" = txt WHERE id = 1}
  int-text PAGEDB_CORRUPT_CATALOG {int field n holds text} {UPDATE sample SET n = 'seven' WHERE id = 2}
  used-big PAGEDB_CORRUPT_CATALOG {run 0 uses 65537 bytes of a 1-page run} {UPDATE page SET used = 65537 WHERE pgno = 0}
  used-negative PAGEDB_CORRUPT_CATALOG {run 0 uses -1 bytes} {UPDATE page SET used = -1 WHERE pgno = 0}
  npages-0 PAGEDB_CORRUPT_CATALOG {run 0 of 0 pages} {UPDATE page SET npages = 0 WHERE pgno = 0}
  npages-huge PAGEDB_CORRUPT_CATALOG {run 1 of 2^32 pages}
    {UPDATE page SET npages = 4294967296 WHERE pgno = 1; UPDATE meta SET value = 4294967297 WHERE key = 'committed_pages'}
  npages-max PAGEDB_CORRUPT_CATALOG {run 1 of 2^63-1 pages}
    {UPDATE page SET npages = 9223372036854775807 WHERE pgno = 1}
  gap PAGEDB_CORRUPT_CATALOG {run 1 recorded at page 2: a gap}
    {UPDATE page SET pgno = 2 WHERE pgno = 1; UPDATE sample SET page = 2 WHERE page = 1;
     UPDATE meta SET value = 3 WHERE key = 'committed_pages'}
  nsamples PAGEDB_CORRUPT_CATALOG {run 0 counts one sample more} {UPDATE page SET nsamples = nsamples + 1 WHERE pgno = 0}
  meta-committed PAGEDB_CORRUPT_CATALOG {meta.committed_pages one more than the page table}
    {UPDATE meta SET value = value + 1 WHERE key = 'committed_pages'}
  meta-committed-huge PAGEDB_CORRUPT_CATALOG {meta.committed_pages 2^62}
    {UPDATE meta SET value = 4611686018427387904 WHERE key = 'committed_pages'}
  meta-samples PAGEDB_CORRUPT_CATALOG {meta.samples one more} {UPDATE meta SET value = value + 1 WHERE key = 'samples'}
  meta-missing PAGEDB_CORRUPT_CATALOG {meta.committed_pages missing} {DELETE FROM meta WHERE key = 'committed_pages'}
  meta-uuid PAGEDB_CORRUPT_CATALOG {meta.uuid not hex} {UPDATE meta SET value = 'not a uuid at all, 32 bytes long' WHERE key = 'uuid'}
  meta-format PAGEDB_CORRUPT_CATALOG {meta.format 3 without meta.features} {UPDATE meta SET value = 3 WHERE key = 'format'}
  meta-pagesize PAGEDB_CORRUPT_HEADER {meta.page_size 128 KiB, the header 64 KiB}
    {UPDATE meta SET value = 131072 WHERE key = 'page_size'}
  field-type PAGEDB_CORRUPT_CATALOG {field 0 of type 'tensor'} {UPDATE field SET type = 'tensor' WHERE idx = 0}
  field-codec PAGEDB_CORRUPT_CATALOG {field 1 with codec 'zstd:3'} {UPDATE field SET codec = 'zstd:3' WHERE idx = 1}
  field-gap PAGEDB_CORRUPT_CATALOG {fields numbered 0, 1, 2, 7} {UPDATE field SET idx = 7 WHERE idx = 3}
  field-missing PAGEDB_CORRUPT_CATALOG {field 3's row gone, its column left} {DELETE FROM field WHERE idx = 3}
  field-name PAGEDB_CORRUPT_CATALOG {field 0 renamed: no column of that name} {UPDATE field SET name = 'image' WHERE idx = 0}
} {
  case cat-$name $code $steps base [cat_case cat-$name base $sql] - $what
}
# On a connection that sees id as a plain column (it read NULL, the rowid
# alias having stored nothing): fill it in, then duplicate a row.
sqlite3 cdb [out cat-dup-ids-catalog]
cdb eval {UPDATE sample SET id = rowid; INSERT INTO sample SELECT * FROM sample WHERE id = 2}
cdb close
finish_catalog [out cat-dup-ids-catalog]

case cat-id-max PAGEDB_OK {open rw read verify check} base \
  [cat_case cat-id-max base {UPDATE sample SET id = 9223372036854775807 WHERE id = 5}] - \
  {sample 5 renumbered 2^63-1, the largest id}
case cat-past-file PAGEDB_CORRUPT_TRUNCATED $steps base \
  [cat_case cat-past-file base {
    INSERT INTO page VALUES(2, 1, 1000, 0);
    UPDATE meta SET value = 3 WHERE key = 'committed_pages'
  }] - {a third committed run (1000 bytes used) that the data file does not hold}

# --- WAL files beside the catalog ----------------------------------------------------

# A WAL of another dataset's catalog: a transaction of "other" that
# rewrote its meta page (SQLite writes no page whose bytes stay the same),
# never checkpointed.  SQLite replays any WAL whose
# frames are whole, so the catalog becomes other's meta: another dataset.
file copy -force [out other-catalog] [testpath walsrc]
sqlite3 cdb [testpath walsrc]
cdb eval {PRAGMA wal_autocheckpoint=0}
cdb eval {UPDATE meta SET value = value + 1 WHERE key = 'moved_samples'}
file copy -force [testpath walsrc]-wal [out foreign-wal]
cdb close
fix_wal_salts [out foreign-wal]
case wal-foreign PAGEDB_NOTADB_MISMATCH {open rw} base base-catalog foreign-wal \
  {a committed WAL of another dataset's catalog beside this one}
# A hot rollback journal of another dataset's catalog: the journal of a
# transaction of "other", as a crash after it was synced would leave it
# (magic and record count written; the nonce fixed and each record's
# checksum made again).  SQLite replays it before anything is read, even
# into a WAL database: a read-only connection cannot.
file copy -force [out other-catalog] [testpath jsrc]
sqlite3 cdb [testpath jsrc]
cdb eval {PRAGMA journal_mode=DELETE}
cdb eval {BEGIN; UPDATE meta SET value = value + 1 WHERE key = 'moved_samples'}
set j [read_bytes [testpath jsrc]-journal 0 [file size [testpath jsrc]-journal]]
cdb eval {COMMIT}
cdb close
binary scan $j @20IuIu sector psize
set nrec [expr {([string length $j] - $sector) / ($psize + 8)}]
set nonce 0x5a19
set hot [binary format H16IIa[expr {$sector - 16}] d9d505f920a163d7 $nrec $nonce [string range $j 16 [expr {$sector - 1}]]]
for {set k 0} {$k < $nrec} {incr k} {
  set at [expr {$sector + $k * ($psize + 8)}]
  set rec [string range $j $at [expr {$at + 4 + $psize - 1}]]
  set sum $nonce
  for {set i [expr {$psize - 200}]} {$i > 0} {incr i -200} {
    binary scan $rec @[expr {4 + $i}]cu b
    incr sum $b
  }
  append hot $rec [binary format I [expr {$sum & 0xffffffff}]]
}
set fd [open [out foreign-journal] wb]
puts -nonewline $fd $hot
close $fd
case journal-foreign-ro PAGEDB_CANTOPEN {open read check} base base-catalog foreign-journal \
  {a hot rollback journal of another dataset's catalog: a read-only open cannot replay it}
case journal-foreign-rw PAGEDB_NOTADB_MISMATCH {rw} base base-catalog foreign-journal \
  {the same journal, replayed by a read-write open: the catalog is now another dataset's}
set fd [open [out garbage-shm] wb]
puts -nonewline $fd [pagedb_testdata 6 32768 6]
close $fd
case shm-garbage PAGEDB_OK {good rwgood check} base base-catalog garbage-shm \
  {32 KiB of garbage as the catalog's WAL index, with no WAL: rebuilt}
set fd [open [out garbage-wal] wb]
puts -nonewline $fd [pagedb_testdata 4 8192 4]
close $fd
case wal-garbage PAGEDB_OK {good rwgood check} base base-catalog garbage-wal \
  {8 KiB of garbage as the catalog's WAL: not a WAL, ignored}

# --- the index file (of base) ---------------------------------------------------------
#
# Each damaged index is detected when the dataset opens: a read-only open
# scans the catalog instead (scan), a read-write one writes the index
# again (rebuilt); both read every sample right (their steps verify every
# byte).  A damaged slot fails the read of its one sample, never gives
# another's bytes.

case ix-whole PAGEDB_OK {open rw read verify good rwgood check quick mapped} base base-catalog base-index \
  {base with its index file, whole: mapped}
case ix-missing PAGEDB_OK {good rwgood check scan rebuilt} base base-catalog - \
  {no index file beside a catalog that names one}
set f [out ix-truncated-index]
file copy -force [out base-index] $f
set fd [open $f r+]
chan truncate $fd [expr {4096 + 40}]
close $fd
case ix-truncated PAGEDB_OK {good rwgood check scan rebuilt} base base-catalog ix-truncated-index \
  {the index cut inside its first chunk, short of the length the catalog records}
proc ix_flip {name at} {
  set f [out $name-index]
  file copy -force [out base-index] $f
  binary scan [read_bytes $f $at 1] cu b
  patch_file $f $at [binary format c [expr {$b ^ 0x5a}]]
}
ix_flip ix-flip-header 40
case ix-flip-header PAGEDB_OK {good rwgood check scan rebuilt} base base-catalog ix-flip-header-index \
  {a flipped byte in the index header's uuid: its checksum fails}
sqlite3 cdb [out base-catalog]
set ixdir [cdb eval {SELECT value FROM meta WHERE key = 'index_dir'}]
cdb close
ix_flip ix-flip-directory [expr {$ixdir + 24}]
case ix-flip-directory PAGEDB_OK {good rwgood check scan rebuilt} base base-catalog ix-flip-directory-index \
  {a flipped byte in the directory in force: its checksum fails}
ix_flip ix-flip-slot [expr {4096 + 8}]
case ix-flip-slot PAGEDB_CORRUPT_INDEX {read verify good rwgood mapped ixcheck} base base-catalog ix-flip-slot-index \
  {a flipped byte in sample 0's slot: the index is in force, that sample's reads fail, the check lists it}
case ix-other PAGEDB_OK {good rwgood check scan rebuilt} base base-catalog other-index \
  {the index file of another dataset}
# A crash between the index's sync and the catalog's commit: base's index
# with one more commit's slots and directory after the bytes in force,
# beside base's catalog and data file.
set p [testpath stale]
foreach s {"" -catalog -index} { file copy -force [out base$s] $p$s }
pagedb gdb $p
gdb ingest -start 6 -count 1 {*}$GEN
gdb close
emit ix-stale-index $p-index
case ix-stale PAGEDB_OK {open rw read verify good rwgood check quick mapped} base base-catalog ix-stale-index \
  {the index of a commit the catalog never recorded (a crash between them): the last commit's part is in force}

# --- the manifest ---------------------------------------------------------------------

set fd [open [out MANIFEST] w]
puts $fd "# The bad-input corpus: made by test/mkcorpus.tcl, run by test/corpus.test."
puts $fd "# NAME CODE STEPS DATA CATALOG SIDE WHAT (every step of STEPS gives CODE)"
puts $fd [list params $GEN]
foreach c $MANIFEST { puts $fd $c }
close $fd
foreach f [glob -directory $OUT *] {
  if {[file tail $f] ne "MANIFEST" && [lsearch -index 3 $MANIFEST [file tail $f]] < 0
      && [lsearch -index 4 $MANIFEST [file tail $f]] < 0 && [lsearch -index 5 $MANIFEST [file tail $f]] < 0} {
    file delete $f
  }
}
set total 0
foreach f [glob -directory $OUT *] { incr total [file size $f] }
puts "[llength $MANIFEST] cases, [llength [glob -directory $OUT *]] files, $total bytes in $OUT"
catch {file delete -force $::TC(testdir)}
