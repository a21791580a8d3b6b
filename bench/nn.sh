#!/usr/bin/env bash
# nn.sh — scadles vs PyTorch (CPU) training throughput, side by side: runs
# bench_nn and bench/torch_compare.py on the same models, batches and thread
# counts (both pinned to T BLAS/OpenMP threads) and prints ratios.
# Usage: bench/nn.sh [seconds per configuration]   (BUILD=build-dir)
set -u
BUILD=${BUILD:-build}
SECS=${1:-0.8}
BENCH="$BUILD/bench/bench_nn"
PY=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)

if [ ! -x "$BENCH" ]; then
	echo "nn.sh: $BENCH not built (make BUILD=$BUILD bench)" >&2
	exit 1
fi
ours=$(mktemp) theirs=$(mktemp)
trap 'rm -f "$ours" "$theirs"' EXIT
have_torch=1
"$PY" -c 'import torch' 2>/dev/null || have_torch=0

# Alternate the two per thread count so machine load hits both alike.
for t in 1 2; do
	OPENBLAS_NUM_THREADS=$t "$BENCH" --seconds "$SECS" --threads "$t" >>"$ours" || exit 1
	if [ $have_torch = 1 ]; then
		OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t MKL_NUM_THREADS=$t \
			"$PY" "$here/torch_compare.py" --seconds "$SECS" --threads "$t" >>"$theirs"
	fi
done

[ $have_torch = 1 ] || echo "nn.sh: python3-torch not installed; scadles figures only"
# Prints one row per model/batch/threads.
awk -v have="$have_torch" '
function field(line, key,    n, i, kv, a) {
	n = split(line, a, " ")
	for (i = 1; i <= n; i++) { split(a[i], kv, "="); if (kv[1] == key) return kv[2] }
	return ""
}
FNR == NR { k = field($0, "model") " " field($0, "batch") " " field($0, "threads")
	    torch[k] = field($0, "samples_per_s"); next }
{ k = field($0, "model") " " field($0, "batch") " " field($0, "threads")
  order[++n] = k; sps[k] = field($0, "samples_per_s"); gf[k] = field($0, "gflops")
  sg[k] = field($0, "sgemm_gflops") }
END {
	printf "%-5s %6s %7s %14s %14s %8s %9s %12s\n", "model", "batch", "threads",
	       "scadles/s", "pytorch/s", "ratio", "GFLOP/s", "sgemm GF/s"
	for (i = 1; i <= n; i++) {
		k = order[i]; split(k, p, " ")
		t = (k in torch) ? torch[k] : ""
		r = (t != "" && t > 0) ? sprintf("%.2fx", sps[k] / t) : "-"
		printf "%-5s %6s %7s %14.0f %14s %8s %9.1f %12.1f\n", p[1], p[2], p[3], sps[k],
		       t == "" ? "-" : sprintf("%.0f", t), r, gf[k], sg[k]
	}
}' "$theirs" "$ours"
