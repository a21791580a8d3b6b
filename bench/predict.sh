#!/usr/bin/env bash
# predict.sh — throughput of `scadles predict`: records/s from a backlog to
# acknowledged predictions (acknowledged / time from the first record
# received to the last acknowledgement, from the summary), the
# Fashion-MNIST MLP of examples/fmnist-mlp.json (784-256-128-10, one
# training epoch), the predictor pinned to one core (taskset -c 0, 1 compute
# thread; librdkafka's threads share that core; on a shared machine the
# records per processor second of the process, also printed, depend less on
# what else runs), Fashion-MNIST training
# records as raw bytes (label in the key) on 32 topics of 4 partitions of the
# embedded broker (it keeps about 5 MB per partition, and a key's records
# share a partition: 6,250 records a topic stay below that), read through
# one pattern; the broker runs on the other core. Then the ceiling: the
# same model's forward pass alone (bench_nn --forward 1, batch BATCH, one
# thread, pinned to the same core) in records/s, and predict's rate as a
# share of it: what is left is the cost of consuming, decoding, batching
# and producing.
# Usage: bench/predict.sh [records per topic] [batch]   (BUILD=build-dir;
# default 6250, i.e. 200,000 records, and 1024)
set -u
. "$(dirname "$0")/common.inc"
bench_init predict.sh taskset
N=${1:-6250}
TOPICS=32
BATCH=${2:-1024}

sets=(--set "train.checkpoint=\"$tmp/mlp.ckpt\"" --set train.threads=1 --set streams.format=raw
      --set streams.label=key --set streams.scale=0.00392156862745098 --set streams.mean=0.286
      --set streams.std=0.353)
"$SCADLES" train -c examples/fmnist-mlp.json --epochs 1 "${sets[@]}" >"$tmp/train.out" 2>"$tmp/train.err" ||
	die "train failed"
topics=()
for i in $(seq 0 $((TOPICS - 1))); do topics+=("bench.$i:4"); done
bench_broker "${topics[@]}"
"$SCADLES" feed --bootstrap-file "$tmp/bs" --prefix bench --topics "$TOPICS" --count "$N" --rate 1000000 --quiet \
	>"$tmp/feed.out" 2>"$tmp/feed.err" || die "feed failed"
taskset -c 0 "$SCADLES" predict -c examples/fmnist-mlp.json "${sets[@]}" --bootstrap-file "$tmp/bs" \
	--in '^bench\.[0-9]+$' --out bench-out --checkpoint "$tmp/mlp.ckpt" --batch "$BATCH" --idle-exit 10 \
	--duration 600 --quiet >"$tmp/pred.out" 2>"$tmp/pred.err" || die "predict failed"
s=$(grep '^summary: ' "$tmp/pred.out" | sed 's/^summary: //')
[ "$(echo "$s" | jq .acknowledged)" -eq $((N * TOPICS)) ] && [ "$(echo "$s" | jq .lost)" -eq 0 ] ||
	die "acknowledged $(echo "$s" | jq .acknowledged) of $((N * TOPICS)), lost $(echo "$s" | jq .lost)"
rate=$(echo "$s" | jq .records_per_s)
echo "$s" | jq -r --arg b "$BATCH" '"predict: \(.acknowledged) records, batch \($b), 1 core: \(.records_per_s | floor) records/s (\(.busy_s * 100 | floor / 100) s from the first record to the last acknowledgement); \(.acknowledged / .cpu_s | floor) records per processor second (\(.cpu_s * 100 | floor / 100) s of the process, start to exit)"'
fwd=$(OPENBLAS_NUM_THREADS=1 taskset -c 0 "$BENCH_NN" --seconds 1 --models mlp --batches "$BATCH" --threads 1 \
	--forward 1) || die "bench_nn --forward failed"
echo "$fwd" | awk -v rate="$rate" -v b="$BATCH" '{
	for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
	printf "predict: forward pass alone, batch %d, 1 thread, same core: %d records/s (%.1f GFLOP/s; sgemm of its shapes %.1f); predict reaches %.1f%% of it\n",
		b, f["samples_per_s"], f["gflops"], f["sgemm_gflops"], 100 * rate / f["samples_per_s"] }'
