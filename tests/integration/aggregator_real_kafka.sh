#!/usr/bin/env bash
# Aggregator on a real Apache Kafka (SCADLES_KAFKA=host:port; skipped
# without it): the job's topics are created through CreateTopics with the
# job's shard count (3, where auto-creation would give 1) and J.model
# compacted; a second start accepts them as they are; a job that needs
# another partition count is refused with both counts; updates are applied
# exactly once across two runs (the second restoring from J.model).
. "$(dirname "$0")/aggregator_common.inc"
if [ -z "${SCADLES_KAFKA:-}" ] || [ "$SCADLES_KAFKA" = unavailable ]; then
	echo "SCADLES_KAFKA is not set (scripts/kafka.sh up)"
	exit 77
fi
bs=$SCADLES_KAFKA
job="aggreal$$x$(date +%s)"
cfg="$tmp/job.json"
write_job "$cfg" "$job" '{"job": {"shards": 3}, "kafka": {"fetch.wait.max.ms": 100}}'

produce "$cfg" --seq-to 20 --dup-every 9
"$SCADLES" aggregator -c "$cfg" -b "$bs" --idle-exit 2 >"$tmp/a1.out" 2>"$tmp/a1.err" || fail "run 1 failed"
[ "$(summary a1 .applied)" = 180 ] || fail "run 1 applied $(summary a1 .applied), expected 180"
check "$cfg" 20 || fail "J.model differs from the expected shards"
if command -v kcat >/dev/null; then
	parts=$(kcat -b "$bs" -L -t "$job.grad" | grep -c "partition [0-9]")
	[ "$parts" = 3 ] || fail "$job.grad has $parts partitions"
fi

produce "$cfg" --seq-from 21 --seq-to 30
"$SCADLES" aggregator -c "$cfg" -b "$bs" --idle-exit 2 >"$tmp/a2.out" 2>"$tmp/a2.err" || fail "run 2 failed"
[ "$(summary a2 .restored)" = 3 ] || fail "run 2 restored $(summary a2 .restored) shards"
check "$cfg" 30 || fail "J.model differs from the expected shards after run 2"

rc=0
"$SCADLES" aggregator -c "$cfg" -b "$bs" --set job.shards=2 --idle-exit 1 >"$tmp/a3.out" 2>"$tmp/a3.err" || rc=$?
[ $rc = 2 ] || fail "a job with 2 shards on 3-partition topics exited $rc, expected 2"
grep -q "$job.grad has 3 partitions, the job needs 2" "$tmp/a3.err" || fail "the partition-count error does not name both counts"
echo "real Kafka: topics created with 3 partitions, 270 updates applied once over two runs, wrong count refused"
echo "PASS"
