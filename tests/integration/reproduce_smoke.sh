#!/usr/bin/env bash
# reproduce_smoke.sh — QUICK=1 runs of the paper reproduction scripts: each
# must finish, print its table and (when gnuplot is installed) write its plot.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
SCADLES=${SCADLES:-$top/$BUILD/scadles}
[ -x "$SCADLES" ] || { echo "reproduce_smoke: $SCADLES not built"; exit 77; }
command -v jq >/dev/null || { echo "reproduce_smoke: jq missing"; exit 77; }
[ -d /usr/share/datasets/fashion-mnist ] || { echo "reproduce_smoke: no Fashion-MNIST"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export SCADLES OUT=$out QUICK=1
"$top/examples/reproduce/scadles_speedup.sh" >"$out/s.log" 2>&1 || { cat "$out/s.log"; exit 1; }
"$top/examples/reproduce/compression.sh" >"$out/c.log" 2>&1 || { cat "$out/c.log"; exit 1; }
grep -q '^S10   full' "$out/scadles.txt" || { echo "no S10 full row"; cat "$out/scadles.txt"; exit 1; }
grep -q '^cr0.1-d0.3' "$out/compression.txt" || { echo "no compression row"; exit 1; }
grep -q '^| adaptive Top-k' "$out/compression-summary.md" || { echo "no compression summary row"; exit 1; }
# Non-IID: the injection rows of both models and the four summary rows.
"$top/examples/reproduce/noniid.sh" >"$out/n.log" 2>&1 || { cat "$out/n.log"; exit 1; }
[ "$(grep -c '^scadles-inject-0.5 ' "$out/noniid.txt")" = 2 ] || { echo "no injection rows"; cat "$out/noniid.txt"; exit 1; }
[ "$(grep -c '^| ' "$out/noniid-summary.md")" = 4 ] || { echo "noniid summary rows"; cat "$out/noniid-summary.md"; exit 1; }
grep -q '^S10   full-auto' "$out/scadles.txt" || { echo "no S10 auto-window row"; exit 1; }
# ScaDLES full compresses: fewer bytes than weighted aggregation alone.
col() { awk -F'\t' -v c="$1" -v k="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == k) n = i }
	$1 == "S10" && $2 == c { print $n }' "$out/scadles.tsv"; }
w=$(col weighted bytes_up)
f=$(col full bytes_up)
[ "$f" -lt "$w" ] || { echo "full sent $f bytes, weighted $w"; exit 1; }
# AdaComp: over the same number of updates, 8-bit log values + Rice-coded
# indices send fewer bytes than float32, and a larger c more; the summary
# rows are written.
"$top/examples/reproduce/adacomp.sh" >"$out/a.log" 2>&1 || { cat "$out/a.log"; exit 1; }
acol() { awk -F'\t' -v v="$1" -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "bytes_up") n = i }
	$1 == v && $2 == c { print $n }' "$out/adacomp.tsv"; }
a32=$(acol adacomp 0.01)
a8=$(acol adacomp-log8 0.01)
a5=$(acol adacomp 0.05)
[ -n "$a8" ] && [ -n "$a32" ] && [ "$a8" -lt "$a32" ] && [ -n "$a5" ] && [ "$a32" -lt "$a5" ] ||
	{ echo "adacomp-log8 sent $a8 bytes, adacomp $a32 (c 0.05: $a5)"; cat "$out/adacomp.tsv"; exit 1; }
[ "$(grep -c '^| AdaComp' "$out/adacomp-summary.md")" = 4 ] || { echo "adacomp summary rows"; exit 1; }
# The auto window reports the window it used (B / sum of the S10 rates, ~1 s).
a=$(col full-auto window)
awk -v a="$a" 'BEGIN { exit !(a > 0.5 && a < 2) }' || { echo "auto window $a"; exit 1; }
if command -v gnuplot >/dev/null; then
	[ -s "$out/scadles-S10.png" ] && [ -s "$out/compression.png" ] || { echo "plots missing"; exit 1; }
fi
# Edge links: every configuration has its row; top-k sends fewer bytes than
# no compression and queues less at the server's ingress than BSP; the
# scaling curve has a table and, with gnuplot, a plot.
SEEDS=1 DEVICES="16 32" "$top/examples/reproduce/edge.sh" >"$out/e.log" 2>&1 || { cat "$out/e.log"; exit 1; }
ecol() { awk -F'|' -v c="$1" -v n="$2" -v k="$3" '$2 == " " c " " && $3 == " " n " " {
	split($k, v, " "); print v[1] }' "$out/edge.md"; }
for c in bsp full nocomp topk; do [ -n "$(ecol "$c" 16 7)" ] || { echo "no edge row $c"; cat "$out/edge.md"; exit 1; }; done
[ -n "$(ecol topk 32 7)" ] || { echo "no 32-device row"; cat "$out/edge.md"; exit 1; }
awk -v t="$(ecol topk 16 7)" -v n="$(ecol nocomp 16 7)" 'BEGIN { exit !(t < n) }' ||
	{ echo "edge: top-k sent $(ecol topk 16 7) MB, no compression $(ecol nocomp 16 7)"; exit 1; }
awk -v t="$(ecol topk 16 8)" -v b="$(ecol bsp 16 8)" 'BEGIN { exit !(t < b) }' ||
	{ echo "edge: top-k queued $(ecol topk 16 8) s at the server, bsp $(ecol bsp 16 8)"; exit 1; }
[ -s "$out/edge.cmd" ] || { echo "edge.cmd missing"; exit 1; }
# ADSP: every policy has its row, the gains and the summary rows are written.
"$top/examples/reproduce/adsp.sh" >"$out/d.log" 2>&1 || { cat "$out/d.log"; exit 1; }
for p in bsp-lr.05 adacomm-lr.05 adsp adsp-max; do
	grep -q "^3.2   $p " "$out/adsp.txt" || { echo "no adsp row $p"; cat "$out/adsp.txt"; exit 1; }
done
[ "$(grep -c "^| ADSP" "$out/adsp-summary.md")" -eq 4 ] && [ -s "$out/adsp.cmd" ] &&
	[ "$(wc -l <"$out/adsp.tsv")" -ge 5 ] || { echo "adsp: summary, cmd or tsv"; exit 1; }
# Same seed, same output.
cp "$out/compression.txt" "$out/c1.txt"
"$top/examples/reproduce/compression.sh" >/dev/null 2>&1
cmp -s "$out/compression.txt" "$out/c1.txt" || { echo "compression run not deterministic"; exit 1; }
echo "reproduce_smoke: ok"
