#!/usr/bin/env bash
# Aggregator failover on a real Apache Kafka (SCADLES_KAFKA=host:port;
# skipped without it): three aggregators split the three shards of a job
# with two workers; one is killed with SIGKILL mid-run. The survivors take
# its shard over from its last J.model snapshot and replay J.grad, the
# workers finish, and every worker's every update was applied exactly once:
# each shard's final version equals the sum of the workers' last seqs.
. "$(dirname "$0")/distributed_real.inc"
for w in 0 1; do
	write_job "$tmp/j$w.json" "[{\"topic\": \"$run.d.$w\"}]" \
		"{\"source\": {\"group_id\": \"$run-w$w\"},
		  \"job\": {\"name\": \"$run\", \"shards\": 3, \"snapshot_interval\": 0.5},
		  \"kafka\": {\"fetch.wait.max.ms\": 20}}"
done
"$SCADLES" feed --bootstrap "$bs" --prefix "$run.d" --topics 2 --count 3000 --rate 6000 \
	--data synth --synth-n 2000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
real_create_job "$tmp/j0.json"
for a in 0 1 2; do
	"$SCADLES" aggregator -c "$tmp/j0.json" --bootstrap "$bs" --idle-exit 15 \
		>"$tmp/a$a.out" 2>"$tmp/a$a.err" &
	eval "a$a=$!"
	pids="$pids $!"
done
sleep 3
for w in 0 1; do
	"$SCADLES" worker -c "$tmp/j$w.json" --bootstrap "$bs" --id $w --throttle 500 --idle-exit 4 \
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
wait "$a2" || fail "aggregator 2 exited $?"
for w in 0 1; do
	f="$tmp/w$w.out"
	check_worker "$f" acked
	check_committed "$f"
done
trained=$(( $(summary "$tmp/w0.out" .trained) + $(summary "$tmp/w1.out" .trained) ))
[ "$trained" -eq 6000 ] || fail "trained $trained of 6000 records"
real_exactly_once 3 "$tmp/a1.out" "$tmp/a2.out" -- "$tmp/w0.out" "$tmp/w1.out"
echo "ok on a real broker: aggregator killed, the survivors applied every update exactly once"
