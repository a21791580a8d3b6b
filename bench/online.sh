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
# nothing is pinned (the broker shares the machine's cores). Then three
# runs with train.threads 1 each way, alternating, with the scadles
# command's allocator setting and with glibc's defaults: what the setting
# costs online training (docs/STREAMS.md).
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
# rate GROUP THREADS: a worker trains the first $max records of the backlog
# under its own consumer group; prints its samples/s online and its span.
rate() {
	"$SCADLES" worker -c examples/worker-fmnist.json --bootstrap-file "$tmp/bs" \
		--set "source.pattern=\"^$prefix\\\\.[0-9]+\$\"" --set "source.group_id=\"$prefix-$1\"" \
		--set 'worker.batch="fixed"' --set worker.b=64 --set "train.threads=$2" --set worker.eval=false \
		--set worker.progress_interval=0 --max-samples "$max" --idle-exit 10 --quiet >"$tmp/worker-$1.out" 2>"$tmp/worker-$1.err" ||
		die "worker $1 (train.threads $2) failed"
	local s span
	s=$(grep '^summary: ' "$tmp/worker-$1.out" | sed 's/^summary: //')
	[ "$(echo "$s" | jq .samples)" -ge "$max" ] ||
		die "worker $1: trained $(echo "$s" | jq .samples) of $max"
	span=$(echo "$s" | jq .train_span_s)
	awk -v s="$span" 'BEGIN { exit !(s > 0) }' || die "worker $1: no time between the first and the last step ($span s)"
	echo "$(echo "$s" | jq '.samples / .train_span_s') $span"
}
for t in 1 2; do
	read -r online span < <(rate "$t" "$t")
	step=$(OPENBLAS_NUM_THREADS=1 "$BENCH_NN" --seconds 5 --models mlp --batches 64 --threads "$t") ||
		die "bench_nn failed"
	step=$(echo "$step" | sed 's/.*samples_per_s=\([0-9.]*\).*/\1/')
	awk -v t="$t" -v o="$online" -v s="$step" -v span="$span" 'BEGIN {
		printf "online: train.threads %d: %d samples/s online (%.2f s of training), %d samples/s for the step alone; online / step %.3f\n",
			t, o, span, s, o / s }'
done
# What the scadles command's allocator setting (sc_mem_tune: large blocks
# mapped on their own, so librdkafka's fetch buffers are fresh pages) costs
# online training: train.threads 1, three runs each way, alternating; any
# glibc.malloc tunable in the environment keeps glibc's defaults (here the
# default tcache count).
set_r=() def_r=()
for k in 1 2 3; do
	read -r r _ < <(rate "set$k" 1)
	set_r+=("$r")
	read -r r _ < <(GLIBC_TUNABLES=glibc.malloc.tcache_count=7 rate "def$k" 1)
	def_r+=("$r")
done
med() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
awk -v a="${set_r[*]}" -v b="${def_r[*]}" -v ma="$(med "${set_r[@]}")" -v mb="$(med "${def_r[@]}")" 'BEGIN {
	n = split(a, x, " "); split(b, y, " ")
	printf "online: allocator: train.threads 1, samples/s with scadles'"'"' setting"
	for (i = 1; i <= n; i++) printf " %d", x[i]
	printf " (median %d), with glibc'"'"'s defaults", ma
	for (i = 1; i <= n; i++) printf " %d", y[i]
	printf " (median %d); setting / defaults %.3f\n", mb, ma / mb }'
