#!/usr/bin/env bash
# online.sh — online training from a backlog against the step rate alone,
# side by side in one run: a standalone `scadles worker` trains the
# Fashion-MNIST MLP of examples/worker-fmnist.json (784-256-128-10) with
# fixed batches of 64 (worker.batch "fixed", no test evaluation while it
# trains) on a backlog of Fashion-MNIST records waiting in 8 topics, with
# train.threads 1 and then 2, and stops after 90% of it (--max-samples:
# the whole measurement is with records still flowing, none of the end of
# the backlog's draining); right after each, bench_nn times the same
# model's training step at batch 64 on as many threads (the best of 5
# windows of a second). The online rate is the summary's samples over
# train_span_s (from the first training step to the last: the group join
# and the final evaluation are not counted); it includes consuming,
# decoding, buffering, shuffling and committing on the worker's threads;
# nothing is pinned (the broker shares the machine's cores).
#
# The backlog is on the embedded broker (`scadles broker`, 16 partitions a
# topic: it keeps about 5 MB per partition, and a label's records share a
# partition, the label being the key: with 16 partitions each label has
# one of its own, 2 MB a topic at the default count), or on the Apache
# Kafka broker that SCADLES_KAFKA names (its topics are made by the feed;
# a run's topics are new).
# Usage: bench/online.sh [records per topic]   (BUILD=build-dir; default
# 25000, i.e. 200,000 records)
set -u
. "$(dirname "$0")/common.inc"
bench_init online.sh
N=${1:-25000}
TOPICS=8

prefix=bench-online-$$-$(date +%s)
if [ -n "${SCADLES_KAFKA:-}" ]; then
	echo "$SCADLES_KAFKA" >"$tmp/bs"
	where="Apache Kafka at $SCADLES_KAFKA"
else
	topics=()
	for i in $(seq 0 $((TOPICS - 1))); do topics+=("$prefix.$i:16"); done
	bench_broker "${topics[@]}"
	where="the embedded broker"
fi
"$SCADLES" feed --bootstrap-file "$tmp/bs" --prefix "$prefix" --topics "$TOPICS" --count "$N" --rate 1000000 \
	--quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || die "feed failed"
max=$((N * TOPICS * 9 / 10))
echo "online: $((N * TOPICS)) Fashion-MNIST records waiting in $TOPICS topics of $where; MLP 784-256-128-10, batch 64, the first $max trained"
for t in 1 2; do
	"$SCADLES" worker -c examples/worker-fmnist.json --bootstrap-file "$tmp/bs" \
		--set "source.pattern=\"^$prefix\\\\.[0-9]+\$\"" --set "source.group_id=\"$prefix-$t\"" \
		--set 'worker.batch="fixed"' --set worker.b=64 --set "train.threads=$t" --set worker.eval=false \
		--set worker.progress_interval=0 --max-samples "$max" --idle-exit 10 --quiet >"$tmp/worker-$t.out" 2>"$tmp/worker-$t.err" ||
		die "worker (train.threads $t) failed"
	s=$(grep '^summary: ' "$tmp/worker-$t.out" | sed 's/^summary: //')
	[ "$(echo "$s" | jq .samples)" -ge "$max" ] ||
		die "train.threads $t: trained $(echo "$s" | jq .samples) of $max"
	span=$(echo "$s" | jq .train_span_s)
	awk -v s="$span" 'BEGIN { exit !(s > 0) }' || die "train.threads $t: no time between the first and the last step ($span s)"
	online=$(echo "$s" | jq '.samples / .train_span_s')
	step=$(OPENBLAS_NUM_THREADS=1 "$BENCH_NN" --seconds 5 --models mlp --batches 64 --threads "$t") ||
		die "bench_nn failed"
	step=$(echo "$step" | sed 's/.*samples_per_s=\([0-9.]*\).*/\1/')
	awk -v t="$t" -v o="$online" -v s="$step" -v span="$span" 'BEGIN {
		printf "online: train.threads %d: %d samples/s online (%.2f s of training), %d samples/s for the step alone; online / step %.3f\n",
			t, o, span, s, o / s }'
done
