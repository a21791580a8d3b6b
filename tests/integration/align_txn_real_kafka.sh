#!/usr/bin/env bash
# A transactional partition does not hold a worker back (source.align): on
# Apache Kafka (SCADLES_KAFKA), build/tools/txn_feed commits 50 records with
# hour-old timestamps to partition 0 of a new topic in one transaction, then
# produces 500 records to partition 1 at 50/s. Partition 0 then ends in a
# commit marker that a read_committed consumer never reads, so its end stays
# one past what was read; the worker, started while the live records flow,
# must still read all 550 (partition 1 paused behind partition 0's old time
# for good would stop it short) and train every one.
# Skips (exit 77) when SCADLES_KAFKA is not set.
set -eu
SCADLES=${SCADLES:-build/scadles}
BUILD=${BUILD:-build}
if [ -z "${SCADLES_KAFKA:-}" ]; then
	echo "SCADLES_KAFKA is not set (run scripts/kafka.sh up and export SCADLES_KAFKA=\$(cat build/kafka/bootstrap))"
	exit 77
fi
bs=$SCADLES_KAFKA
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*"
	for f in "$tmp"/*.err; do echo "--- $f"; tail -n 5 "$f"; done
	exit 1
}
topic="align-txn-$(date +%s)-$$"
"$BUILD/tools/txn_feed" -b "$bs" --topic "$topic" --old 50 --live 500 --rate 50 \
	>"$tmp/txn.out" 2>"$tmp/txn.err" &
pid=$!
sleep 3
"$SCADLES" worker -c examples/worker-fmnist.json --bootstrap "$bs" --idle-exit 5 \
	--set source.pattern= --set "source.topics=[{\"topic\": \"$topic\"}]" \
	--set "source.group_id=$topic" --set source.align=2 --set worker.eval_interval=0 \
	>"$tmp/w.out" 2>"$tmp/w.err" || fail "worker exited non-zero"
wait "$pid" || fail "txn_feed failed"
pid=
cat "$tmp/txn.out"
s=$(sed -n 's/^summary: //p' "$tmp/w.out")
[ -n "$s" ] || fail "no summary"
consumed=$(echo "$s" | jq .consumed)
trained=$(echo "$s" | jq .trained)
pauses=$(echo "$s" | jq .align_pauses)
echo "worker: consumed $consumed, trained $trained, align pauses $pauses"
[ "$consumed" -eq 550 ] && [ "$trained" -eq 550 ] || fail "consumed $consumed, trained $trained of 550"
echo "align_txn_real_kafka: ok"
