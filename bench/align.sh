#!/usr/bin/env bash
# align.sh — a worker catching up on a backlog, with and without reading its
# partitions in time order (source.align), side by side in one run.
#
# The feed publishes Fashion-MNIST to 4 topics of 4 partitions each at
# RATE records/s a topic for SECONDS (the label is the key, so a partition
# holds the records of 2 or 3 labels), and only then a standalone worker
# (examples/worker-fmnist.json) trains the whole backlog and exits idle:
# once with source.align 0 and once with the default, each in a group of
# its own. For each it prints the test accuracy at the end (the t10k set),
# the lowest per-class accuracy, how many times a partition was paused for
# running ahead and the seconds it ran (the last 5 idle). Without alignment, librdkafka's fetches bring
# each partition the same bytes per request, so the partitions with fewer
# records run out first and the end of the backlog is the few labels of
# the rest.
#
# Needs an Apache Kafka broker: SCADLES_KAFKA (bootstrap address), else the
# one `scripts/kafka.sh up` runs (started if it is not; KAFKA_DIR as there). The embedded
# broker serves one produce batch per partition per fetch, whatever its
# size, so its partitions drain at the same pace in batches and the skew
# does not arise there.
#
# Usage: bench/align.sh [RATE [SECONDS]]   (BUILD=build-dir; defaults 1000
# and 45, i.e. 180,000 records; about 3 minutes)
set -u
. "$(dirname "$0")/common.inc"
BENCH_NN=${BENCH_NN:-/bin/true} # not used here
bench_init align.sh
RATE=${1:-1000}
SECONDS_=${2:-45}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [ -n "${SCADLES_KAFKA:-}" ]; then
	bs=$SCADLES_KAFKA
else
	"$ROOT/scripts/kafka.sh" up >"$tmp/kafka.log" 2>&1 || { cat "$tmp/kafka.log" >&2; die "Apache Kafka did not start"; }
	bs=$(cat "${KAFKA_DIR:-$ROOT/build/kafka}/bootstrap")
fi
prefix=bench-align-$$-$(date +%s)
count=$((RATE * SECONDS_))
"$SCADLES" feed --bootstrap "$bs" --prefix "$prefix" --topics 4 --partitions 4 \
	--rate "$RATE" --count "$count" --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" ||
	die "the feed failed"
total=$((4 * count))
echo "align: backlog of $total records in 4 topics x 4 partitions on $bs, fed at $RATE/s a topic for ${SECONDS_} s; $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores"

for align in 0 2; do
	"$SCADLES" worker -c "$ROOT/examples/worker-fmnist.json" --bootstrap "$bs" --idle-exit 5 \
		--set "source.pattern=^${prefix//./\\.}\\..*" --set "source.group_id=$prefix-$align" \
		--set "source.align=$align" >"$tmp/w$align.out" 2>"$tmp/w$align.err" ||
		die "the worker (source.align $align) failed"
	sed -n 's/^summary: //p' "$tmp/w$align.out" >"$tmp/w$align.json"
	jq -e '.test_accuracy != null' "$tmp/w$align.json" >/dev/null 2>&1 ||
		die "the worker (source.align $align) printed no summary with a test accuracy"
	jq -r --arg a "$align" --arg n "$total" \
		'"align: source.align \($a): trained \(.trained) of \($n), test accuracy \(.test_accuracy * 10000 | round / 10000), lowest class \(.test_per_class_accuracy | min * 1000 | round / 1000), pauses for running ahead \(.align_pauses), \(.elapsed * 10 | round / 10) s (5 of them idle)"' \
		"$tmp/w$align.json"
done
