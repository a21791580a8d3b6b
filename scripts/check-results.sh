#!/usr/bin/env bash
# check-results.sh SCADLES OUT — reruns the fast subset of the reproductions
# that docs/RESULTS.md's "check-" blocks hold (the S10 speedup of full
# ScaDLES over BSP and the truncation claim on S2 at a 600-s horizon, 5 seeds
# each), regenerates those blocks and fails, naming the lines, when a claim
# in them moved: a verdict, setting or row changed, or a median moved past its
# tolerance (scripts/results-check.py; the last digits of a run depend on the
# processor, so the blocks are not compared byte for byte).  `make
# check-results` runs it; with WRITE=1 it writes the blocks back instead
# (`make check-results WRITE=1`).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
export SCADLES=$1 OUT=$2 JOBS=${JOBS:-2}
doc=$top/docs/RESULTS.md
for b in summary scadles buffers; do
	grep -qx "<!-- generated: check-$b -->" "$doc" ||
		{ echo "check-results: $doc has no check-$b block" >&2; exit 1; }
done
rm -rf "$OUT"
mkdir -p "$OUT"
start=$(date +%s)
SETS=S10 CONFIGS="bsp full" SEEDS="1 2 3 4 5" HORIZON=600 EVAL=2 STAYS=0 \
	"$top/examples/reproduce/scadles_speedup.sh" >"$OUT/scadles.log"
SETS=S2 SEEDS="1 2 3 4 5" HORIZON=600 "$top/examples/reproduce/buffers.sh" >"$OUT/buffers.log"
SUMMARY_CMD="make check-results" "$top/examples/reproduce/summary.sh" >/dev/null
"$top/scripts/results-md.sh" "$OUT" check- "$doc" >"$OUT/RESULTS.md"
echo "check-results: reran the subset in $(($(date +%s) - start)) s"
if [ "${WRITE:-0}" = 1 ]; then
	cp "$OUT/RESULTS.md" "$doc"
	echo "check-results: wrote $doc"
else
	# The claims, not the last digits: every word (verdicts, settings, rows)
	# the same, each median within its tolerance (scripts/results-check.py
	# states it; docs/RESULTS.md says why).
	python3 "$top/scripts/results-check.py" "$doc" "$OUT/RESULTS.md" check- &&
		echo "check-results: ok"
fi
