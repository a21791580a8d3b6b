#!/usr/bin/env bash
# Aggregator crash: two aggregators split the shards of a job with two
# workers; one is killed with SIGKILL mid-run. The survivor takes its shards
# over from their last J.model snapshots and replays J.grad, the workers
# finish, and every worker's every update was applied exactly once: each
# shard's final version equals the sum of the workers' last seqs.
. "$(dirname "$0")/distributed_common.inc"

start_broker ak.0:2 ak.1:2 dj.grad:2 dj.model:2 dj.bcast:2 dj.inject:1 dj.ctl:1
"$SCADLES" feed --bootstrap "$bs" --prefix ak --topics 2 --count 3000 --rate 6000 --data synth \
	--synth-n 2000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
# One topic and consumer group per worker: no data rebalance muddles the run.
for w in 0 1; do
	write_job "$tmp/j$w.json" "[{\"topic\": \"ak.$w\"}]" \
		"{\"source\": {\"group_id\": \"ak-$w\"}, \"job\": {\"snapshot_interval\": 0.5}}"
done

for a in 0 1; do
	"$SCADLES" aggregator -c "$tmp/j0.json" --bootstrap "$bs" --idle-exit 14 \
		>"$tmp/a$a.out" 2>"$tmp/a$a.err" &
	eval "a$a=$!"
	pids="$pids $!"
done
sleep 2
for w in 0 1; do
	"$SCADLES" worker -c "$tmp/j$w.json" --bootstrap "$bs" --id $w --throttle 500 --idle-exit 3 \
		>"$tmp/w$w.out" 2>"$tmp/w$w.err" &
	eval "w$w=$!"
	pids="$pids $!"
done
wait_trained "$tmp/w0.err" 1000 "$w0"
kill -9 "$a0"
echo "aggregator 0 killed"
wait "$w0" || fail "worker 0 exited $?"
wait "$w1" || fail "worker 1 exited $?"
wait "$a1" || fail "aggregator 1 exited $?"
for w in 0 1; do
	check_worker "$tmp/w$w.out" acked
done
trained=$(( $(summary "$tmp/w0.out" .trained) + $(summary "$tmp/w1.out" .trained) ))
[ "$trained" -eq 6000 ] || fail "trained $trained of 6000 records"
check_exactly_once "$tmp/a1.out" "$tmp/w0.out" "$tmp/w1.out"
echo "ok: aggregator killed, the survivor applied every update exactly once"
