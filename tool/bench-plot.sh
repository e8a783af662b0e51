#!/bin/sh
# bench-plot.sh -- the charts of pagedb-bench's CSV (pagedb-bench --csv FILE),
# drawn with gnuplot (Debian: gnuplot-nox) into PNG files:
#
#   OUTDIR/throughput-WORKLOAD.png  the median MB/s of every system and
#                                   operation (log scale), grouped by operation
#   OUTDIR/writes-WORKLOAD.png      durable write MB/s by writer threads, per system
#
# Each chart's title carries the command line and the machine that the CSV
# names at its top.  Usage: tool/bench-plot.sh FILE.csv [OUTDIR (default doc/bench)]
set -e
csv=$1
out=${2:-doc/bench}
if [ -z "$csv" ] || [ ! -r "$csv" ]; then
  echo "usage: $0 FILE.csv [OUTDIR]  (FILE.csv from pagedb-bench --csv)" >&2
  exit 2
fi
command -v gnuplot >/dev/null 2>&1 || {
  echo "$0: gnuplot not found: install the Debian package gnuplot-nox" >&2
  exit 2
}
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-plot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Text for a gnuplot string in double quotes: backslashes and quotes escaped.
gq() { printf "%s" "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g'; }
# The command line, folded to the charts' width.
cmd=$(gq "$(sed -n 's/^# command: //p' "$csv" | head -1)" |
      fold -s -w 130 | awk '{ printf "%s%s", (NR > 1 ? "\\n" : ""), $0 }')
machine=$(gq "$(sed -n 's/^# machine: //p' "$csv" | head -1)")

# The CSV's fields, with the quotes around the names taken off.
fields() {
  grep -v '^#' "$csv" | sed 1d | awk -F, -v OFS='\t' '{ gsub(/"/, ""); $1 = $1; print }'
}

for wl in $(fields | cut -f1 | sort -u); do
  # Throughput: the medians with a rate, not the open and size rows; one bar
  # each, labelled "operation: system", coloured by family.
  fields | awk -F'\t' -v OFS='\t' -v wl="$wl" '
    $1 == wl && $7 == "median" && $9 != "" && $5 != "open to first read" {
      label = $5 ": " $4
      if( $5 == "write" ) label = label " x" $6
      fam = $4 ~ /^pagedb/ ? 1 : $4 ~ /^sqlite/ ? 2 : $4 ~ /^lmdb/ ? 3 : 0
      print n++, $9, fam, label
    }' > "$tmp/rate"
  n=$(wc -l < "$tmp/rate")
  [ "$n" -gt 0 ] || continue
  height=$((160 + 18 * n))
  gnuplot <<EOF
set terminal pngcairo size 1100,$height font ',9'
set output '$out/throughput-$wl.png'
set title "$wl: median MB/s by system and operation\n$cmd\n$machine" noenhanced
set datafile separator '\t'
set logscale x
set xrange [1:*]
set xlabel 'MB/s (log scale)'
set yrange [$n:-1]
set ytics nomirror font ',8' noenhanced
set grid xtics
set key off
set style fill solid 0.8
set lmargin 38
set palette maxcolors 4
set palette defined (0 '#777777', 1 '#1f77b4', 2 '#d62728', 3 '#2ca02c')
unset colorbox
set cbrange [0:3]
plot '$tmp/rate' using (sqrt(\$2)):1:(1):(\$2):(\$1-0.4):(\$1+0.4):3:ytic(4) with boxxyerror lc palette, \
     '' using 2:1:(sprintf(' %.0f', \$2)) with labels left font ',7'
EOF

  # Write scaling: MB/s against writer threads, a line per system.
  fields | awk -F'\t' -v OFS='\t' -v wl="$wl" '
    $1 == wl && $7 == "median" && $5 == "write" && $9 != "" { print $4, $6, $9 }' |
    sort -t"$(printf '\t')" -k1,1 -k2,2n > "$tmp/writes"
  plot=""
  for sys in $(cut -f1 "$tmp/writes" | sort -u | tr ' ' '~'); do
    s=$(printf "%s" "$sys" | tr '~' ' ')
    f="$tmp/w-$(printf "%s" "$sys" | tr -c 'A-Za-z0-9' '_')"
    awk -F'\t' -v s="$s" '$1 == s { print $2 "\t" $3 }' "$tmp/writes" > "$f"
    plot="$plot${plot:+, }'$f' using 1:2 with linespoints lw 2 pt 7 title \"$(gq "$s")\""
  done
  [ -n "$plot" ] || continue
  gnuplot <<EOF
set terminal pngcairo size 900,560 font ',9'
set output '$out/writes-$wl.png'
set title "$wl: durable writes, MB/s by writer threads\n$cmd\n$machine" noenhanced
set datafile separator '\t'
set xlabel 'writer threads'
set ylabel 'MB/s'
set xtics 1
set offsets 0.3, 0.3, 0, 0
set yrange [0:*]
set grid
set key outside right noenhanced
plot $plot
EOF
  echo "$out/throughput-$wl.png $out/writes-$wl.png"
done
