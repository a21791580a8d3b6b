#!/usr/bin/env bash
# run-all.sh — runs every paper reproduction (make reproduce); tables in
# build/reproduce/*.txt (per-run rows in *.tsv where a script takes SEEDS),
# plots in build/reproduce/*.png, the summary in build/reproduce/summary.md;
# `make results` puts them into docs/RESULTS.md.
#   examples/reproduce/run-all.sh      (QUICK=1: short smoke runs of each)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
start=$(date +%s)
for s in scadles_speedup buffers noniid compression adacomp adsp downlink edge summary; do
	echo "== $s"
	t0=$(date +%s)
	"$here/$s.sh"
	echo "== $s: $(($(date +%s) - t0)) s"
done
echo "reproduce: all done in $(($(date +%s) - start)) s; see ${OUT:-build/reproduce}/"
