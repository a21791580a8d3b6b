#!/usr/bin/env bash
# nn.sh — scadles vs PyTorch (CPU) training throughput, side by side: runs
# bench_nn and bench/torch_compare.py on the same models, batches and thread
# counts (both pinned to T BLAS/OpenMP threads) and prints ratios. The two
# alternate configuration by configuration, twice, and the better of each
# pair of runs counts, so load from other processes hits both alike.
# GFLOP/s: the multiply-adds scadles actually did (its conv2d backward skips
# the zeros of a sparse output gradient); dense GF/s: the same steps counted
# as dense products, as PyTorch does them; sgemm GF/s: plain sgemm calls of
# those dense shapes.
# Usage: bench/nn.sh [seconds per run]   (BUILD=build-dir)
set -u
BUILD=${BUILD:-build}
SECS=${1:-0.4}
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
[ $have_torch = 1 ] || echo "nn.sh: python3-torch not installed; scadles figures only"

for t in 1 2; do
	if [ $have_torch = 1 ]; then
		# One PyTorch process per thread count (BLAS threads are fixed at load).
		coproc TORCH { OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t MKL_NUM_THREADS=$t \
			exec "$PY" "$here/torch_compare.py" --serve --seconds "$SECS"; }
	fi
	for rep in 1 2; do
		for m in mlp cnn; do
			for b in 16 64 256; do
				OPENBLAS_NUM_THREADS=$t "$BENCH" --seconds "$SECS" --models $m \
					--batches $b --threads $t >>"$ours" || exit 1
				if [ $have_torch = 1 ]; then
					echo "$m $b $t" >&"${TORCH[1]}"
					IFS= read -r line <&"${TORCH[0]}" && echo "$line" >>"$theirs"
				fi
			done
		done
	done
	if [ $have_torch = 1 ]; then
		exec {TORCH[1]}>&-
		wait "$TORCH_PID" 2>/dev/null
	fi
done

# One row per model/batch/threads, the better of the two runs on each side.
awk '
function field(line, key,    n, i, kv, a) {
	n = split(line, a, " ")
	for (i = 1; i <= n; i++) { split(a[i], kv, "="); if (kv[1] == key) return kv[2] }
	return ""
}
FNR == NR { k = field($0, "model") " " field($0, "batch") " " field($0, "threads")
	    v = field($0, "samples_per_s") + 0; if (v > torch[k]) torch[k] = v; next }
{ k = field($0, "model") " " field($0, "batch") " " field($0, "threads")
  if (!(k in sps)) order[++n] = k
  v = field($0, "samples_per_s") + 0
  if (v > sps[k]) { sps[k] = v; gf[k] = field($0, "gflops"); dg[k] = field($0, "dense_gflops") }
  g = field($0, "sgemm_gflops") + 0; if (g > sg[k]) sg[k] = g }
END {
	printf "%-5s %6s %7s %14s %14s %8s %9s %11s %12s\n", "model", "batch", "threads",
	       "scadles/s", "pytorch/s", "ratio", "GFLOP/s", "dense GF/s", "sgemm GF/s"
	for (i = 1; i <= n; i++) {
		k = order[i]; split(k, p, " ")
		t = (k in torch) ? torch[k] : 0
		r = (t > 0) ? sprintf("%.2fx", sps[k] / t) : "-"
		ts = (t > 0) ? sprintf("%.0f", t) : "-"
		printf "%-5s %6s %7s %14.0f %14s %8s %9.1f %11.1f %12.1f\n", p[1], p[2], p[3], sps[k],
		       ts, r, gf[k], dg[k], sg[k]
	}
}' "$theirs" "$ours"
