# lib.sh — shared helpers of the reproduction scripts: where the simulator and
# outputs live, config generation from a base file with jq, running one
# simulation, reading its metric lines, and plotting with gnuplot.
#   Sourced by examples/reproduce/*.sh.  Environment:
#     SCADLES  the scadles command (default build/scadles)
#     OUT      output folder (default build/reproduce)
#     QUICK=1  short runs for smoke testing (numbers are not the reported ones)
#     REUSE=1  keep runs already in OUT with the same configuration
#     JOBS     simulations run at a time by the scripts that use sim_bg (1)
#     SEEDS    train.seed values (the stream-rate draws, data order and initial
#              model) of the scripts that take several; tables give the median
#              and [min, max] over them
set -eu
# One BLAS thread: the same figures whatever the machine's core count.
export OPENBLAS_NUM_THREADS=1
REPRO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$REPRO_DIR/../.." && pwd)
SCADLES=${SCADLES:-$TOP/build/scadles}
OUT=${OUT:-$TOP/build/reproduce}
QUICK=${QUICK:-0}
mkdir -p "$OUT"
command -v jq >/dev/null || { echo "reproduce: jq is required" >&2; exit 1; }
[ -x "$SCADLES" ] || { echo "reproduce: $SCADLES not built (make)" >&2; exit 1; }

# q FULL QUICKVAL: FULL normally, QUICKVAL with QUICK=1.
q() { if [ "$QUICK" = 1 ]; then echo "$2"; else echo "$1"; fi; }

# mkconf BASE OUTFILE JQ-FILTER: writes BASE transformed by the filter.
mkconf() { jq "$3" "$1" >"$2"; }

# sim NAME CONFIG: runs the simulator once; metric lines in $OUT/<tag>/NAME.jsonl.
# With REUSE=1 a run whose metric lines end with the end line is kept.
sim() {
	local name=$1 cfg=$2 dir=$OUT/$TAG
	mkdir -p "$dir"
	if [ "${REUSE:-0}" = 1 ] && cmp -s "$cfg" "$dir/$name.json" &&
		tail -n 1 "$dir/$name.jsonl" 2>/dev/null | grep -q '"event":"end"'; then
		return 0
	fi
	cp "$cfg" "$dir/$name.json"
	"$SCADLES" sim -c "$dir/$name.json" -o "$dir/$name.jsonl" ||
		{ echo "reproduce: $name failed" >&2; return 1; }
}

# sim_bg NAME CONFIG: sim in the background, at most JOBS (1) at a time;
# sim_wait waits for all and fails if any failed.  CONFIG must stay in place
# until sim_wait (give each run its own file).
JOBS=${JOBS:-1}
sim_bg() {
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
	(sim "$1" "$2" || touch "$OUT/$TAG/.failed") &
}
sim_wait() {
	wait
	[ ! -e "$OUT/$TAG/.failed" ] || { rm -f "$OUT/$TAG/.failed"; return 1; }
}

# endf NAME KEY: a field of the end line.
endf() { tail -n 1 "$OUT/$TAG/$1.jsonl" | jq -r ".$2 // \"-\""; }

# t_acc NAME ACC: first virtual time the test accuracy reached ACC ("-" if never).
t_acc() {
	jq -rs --argjson a "$2" '[.[] | select(.event == null and .test_acc >= $a) | .t] |
		if length > 0 then .[0] else "-" end' "$OUT/$TAG/$1.jsonl"
}

# t_loss NAME LOSS: first virtual time the window's training loss fell to LOSS.
t_loss() {
	jq -rs --argjson l "$2" '[.[] | select(.event == null and .loss > 0 and .loss <= $l) | .t] |
		if length > 0 then .[0] else "-" end' "$OUT/$TAG/$1.jsonl"
}

# field_at NAME KEY ACC: KEY of the first metric line whose test accuracy reached ACC.
field_at() {
	jq -rs --argjson a "$3" --arg k "$2" '[.[] | select(.event == null and .test_acc >= $a) |
		.[$k]] | if length > 0 then .[0] else "-" end' "$OUT/$TAG/$1.jsonl"
}

# final_acc NAME [N]: mean test accuracy of the last N metric lines (3).
final_acc() {
	jq -rs --argjson n "${2:-3}" '[.[] | select(.event == null) | .test_acc] | .[-$n:] |
		(add / length * 10000 | round / 10000)' "$OUT/$TAG/$1.jsonl"
}

# ratio A B: A / B with 2 decimals, "-" when either is missing.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-";
	else printf "%.2f\n", a / b }'; }

# ratiox A B: ratio with an "x" appended ("-" stays "-").
ratiox() { local r; r=$(ratio "$1" "$2"); [ "$r" = - ] && echo - || echo "${r}x"; }

# tsv NAME KEY...: columns t and KEYs of the metric lines, for gnuplot.
tsv() {
	local name=$1
	shift
	local keys
	keys=$(printf '.%s,' t "$@")
	jq -r "select(.event == null) | [${keys%,}] | @tsv" "$OUT/$TAG/$name.jsonl"
}

# plot PNG TITLE XLABEL YLABEL "FILE|COLS|TITLE"...: one line per series
# (gnuplot "using" columns, e.g. 1:2); PLOT_EXTRA adds gnuplot commands.
plot() {
	local png=$1 title=$2 xl=$3 yl=$4
	shift 4
	command -v gnuplot >/dev/null || { echo "reproduce: gnuplot missing, no $png" >&2; return 0; }
	local cmd="" sep="plot "
	for s in "$@"; do
		IFS='|' read -r f c t <<<"$s"
		cmd="$cmd$sep'$f' using $c with lines lw 2 title '$t'"
		sep=", "
	done
	figure "$png" "$title" "$xl" "$yl" png "$cmd"
}

# figure PNG TITLE XLABEL YLABEL TERMINAL PLOTCMD: one gnuplot figure, with
# PLOT_EXTRA's commands before the plot command.
figure() {
	gnuplot <<GP
set terminal $5 size 900,560
set output '$1'
set title '$2'
set xlabel '$3'
set ylabel '$4'
set key bottom right
set grid
${PLOT_EXTRA:-}
$6
GP
}

# spread KEY NAME...: the runs' metric KEY at each evaluation, one line per
# evaluation time: t, median, min, max over the runs (runs evaluated on the
# same grid; a line is left out when a run has no evaluation there).
spread() {
	local key=$1 f
	shift
	for n in "$@"; do
		jq -r --arg k "$key" 'select(.event == null and .[$k] != null) | "\(.t)\t\(.[$k])"' \
			"$OUT/$TAG/$n.jsonl"
	done | sort -g -k1,1 -s | awk -v runs=$# -F'\t' '
	function flush(   i, j, x, m) {
		if (k != runs) return
		for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
			x = v[j]; v[j] = v[j - 1]; v[j - 1] = x }
		m = (v[int((k + 1) / 2)] + v[int(k / 2) + 1]) / 2
		printf "%s\t%.4f\t%.4f\t%.4f\n", t, m, v[1], v[k] }
	$1 != t { if (NR > 1) flush(); t = $1; k = 0 }
	{ v[++k] = $2 + 0 }
	END { if (NR > 0) flush() }'
}

# plot_spread PNG TITLE XLABEL YLABEL "FILE|TITLE"...: per series a median
# line and a shaded min-max band (FILE: lines of spread), every band drawn
# before the lines so that none hides a line; PLOT_EXTRA adds gnuplot commands.
plot_spread() {
	local png=$1 title=$2 xl=$3 yl=$4 i=0 bands="" lines=""
	shift 4
	command -v gnuplot >/dev/null || { echo "reproduce: gnuplot missing, no $png" >&2; return 0; }
	for s in "$@"; do
		IFS='|' read -r f t <<<"$s"
		i=$((i + 1))
		bands="$bands'$f' using 1:3:4 with filledcurves lc $i fs transparent solid 0.15 notitle, "
		lines="$lines, '$f' using 1:2 with lines lc $i lw 2 title '$t'"
	done
	figure "$png" "$title" "$xl" "$yl" pngcairo "plot $bands${lines#, }"
}

# med_range VALUE...: "median [min, max]" of the values; "-" (never) counts
# as later than any time, so a median of "-" means half the runs or more
# never got there.
med_range() {
	printf '%s\n' "$@" | sed 's/^-$/inf/' | sort -g | awk '{ v[NR] = $1 }
	function f(x) { return x == "inf" ? "-" : sprintf("%.10g", x) }
	END { a = v[int((NR + 1) / 2)]; b = v[int(NR / 2) + 1]
	      m = (a == "inf" || b == "inf") ? "inf" : (a + b) / 2
	      printf "%s [%s, %s]\n", f(m), f(v[1]), f(v[NR]) }'
}

# record TAG COMMAND: $OUT/TAG.cmd holds the binary's version, the platform it
# ran on (processor, OpenBLAS core, nn kernels: the last digits depend on
# them) and the command that reproduces $OUT/TAG.txt; scripts/results-md.sh
# heads the table with them.
record() {
	{
		"$SCADLES" --version
		"$SCADLES" --version --verbose | sed -n 's/^platform: //p'
		echo "$2"
	} >"$OUT/$1.cmd"
}

# med_dec DECIMALS VALUE...: "median [min, max]" of the numbers among the
# values with DECIMALS decimals; "-" (undefined) are left out and "(k of n)"
# then says how many were numbers; "-" when none were.
med_dec() {
	local d=$1
	shift
	printf '%s\n' "$@" | awk -v d="$d" '$1 != "-" { v[++k] = $1 + 0 } END {
		if (k == 0) { print "-"; exit }
		for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
			x = v[j]; v[j] = v[j - 1]; v[j - 1] = x }
		m = (v[int((k + 1) / 2)] + v[int(k / 2) + 1]) / 2
		f = "%." d "f"
		printf f " [" f ", " f "]%s\n", m, v[1], v[k], k < NR ? " (" k " of " NR ")" : "" }'
}

# med_ratio VALUE...: med_dec with 2 decimals.
med_ratio() { med_dec 2 "$@"; }

# med VALUE...: the median alone of med_range ("-" counts as never).
med() { med_range "$@" | cut -d' ' -f1; }

# tsv_col FILE KEY [COL=VAL]...: KEY's column of the rows of a tab-separated
# file with a header line whose columns COL equal VAL, one per line.
tsv_col() {
	local f=$1 k=$2
	shift 2
	awk -F'\t' -v k="$k" -v conds="$*" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i
		n = split(conds, cs, " "); next }
	{ ok = 1; for (j = 1; j <= n; j++) { split(cs[j], kv, "="); if ($c[kv[1]] != kv[2]) ok = 0 }
	  if (ok) print $c[k] }' "$f"
}

# verdict MEDIAN PAPER UNIT: "met" when MEDIAN >= PAPER, else how far short.
verdict() {
	awk -v m="$1" -v p="$2" -v u="$3" 'BEGIN {
		if (m == "-") { print "not measured (undefined on half the seeds or more)"; exit }
		if (m + 0 >= p + 0) printf "met (median %s%s >= %s%s)\n", m, u, p, u
		else printf "**short**: median %s%s vs %s%s, %.2f below (%.0f%% of the paper'"'"'s)\n",
			m, u, p, u, p - m, 100 * m / p }'
}

# within MEDIAN LIMIT UNIT: "met" when MEDIAN (a difference, e.g. accuracy
# points against a reference) is no further than LIMIT below zero, else by
# how much it is short.
within() {
	awk -v m="$1" -v l="$2" -v u="$3" 'BEGIN {
		if (m == "-") { print "not measured"; exit }
		if (m + 0 >= -l) printf "met (median %+.2f%s, within %s%s)\n", m, u, l, u
		else printf "**short** by %.2f%s (median %+.2f%s, limit -%s%s)\n", -l - m, u, m, u, l, u }'
}
