#!/usr/bin/env bash
# An aggregator started on a real broker where its job's topics do not exist
# yet creates them and runs: right after CreateTopics a partition may answer
# "not leader" or "unknown topic" for a moment, which the aggregator retries
# with backoff instead of exiting. Three fresh jobs in a row; each applies
# every update the self-test producer sends (2 workers x 4 shards x 10 seqs).
. "$(dirname "$0")/distributed_real.inc"
for i in 1 2 3; do
	jq -n --arg j "${run}f$i" '{model: {input: [1, 28, 28], layers: [{type: "flatten"},
	  {type: "dense", units: 8}, {type: "relu"}, {type: "dense", units: 10}]},
	  job: {name: $j, shards: 4, workers: 2, sync: {policy: "asp"}}}' >"$tmp/f$i.json"
	"$SCADLES" aggregator -c "$tmp/f$i.json" --bootstrap "$bs" --idle-exit 5 --duration 60 \
		>"$tmp/agg$i.out" 2>"$tmp/agg$i.err" &
	pa=$!
	pids="$pids $pa"
	for _ in $(seq 1 100); do
		grep -q 'starting from the seeded model' "$tmp/agg$i.err" && break
		kill -0 "$pa" 2>/dev/null || break
		sleep 0.1
	done
	"$AGG_SELFTEST" produce -c "$tmp/f$i.json" --bootstrap "$bs" --seq-to 10 \
		>"$tmp/p$i.out" 2>"$tmp/p$i.err" || fail "self-test producer $i exited $?"
	wait "$pa" || fail "aggregator $i on fresh topics exited $?"
	applied=$(summary "$tmp/agg$i.out" .applied)
	[ "$applied" -eq 80 ] || fail "aggregator $i applied $applied of 80 updates"
	echo "job $i: topics created, 80 of 80 updates applied"
done
echo "aggregator_real_fresh: ok"
