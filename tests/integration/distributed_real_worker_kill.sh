#!/usr/bin/env bash
# Worker crash on a real Apache Kafka (SCADLES_KAFKA=host:port; skipped
# without it): one of two workers is killed with SIGKILL mid-run and
# restarted with the same id. It resumes at its group's committed offsets,
# its seqs continue after the ones it sent before (found on J.grad), every
# data partition ends committed to its end (no record skipped) and each
# shard's version equals the sum of the workers' last seqs (exactly once).
. "$(dirname "$0")/distributed_real.inc"
for w in 0 1; do
	write_job "$tmp/j$w.json" "[{\"topic\": \"$run.d.$w\"}]" \
		"{\"source\": {\"group_id\": \"$run-w$w\"}, \"job\": {\"name\": \"$run\"},
		  \"kafka\": {\"fetch.wait.max.ms\": 20}}"
done
"$SCADLES" feed --bootstrap "$bs" --prefix "$run.d" --topics 2 --count 3000 --rate 6000 \
	--data synth --synth-n 2000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
real_create_job "$tmp/j0.json"
"$SCADLES" aggregator -c "$tmp/j0.json" --bootstrap "$bs" --idle-exit 14 >"$tmp/a.out" 2>"$tmp/a.err" &
a=$!
pids="$pids $a"
sleep 1
"$SCADLES" worker -c "$tmp/j0.json" --bootstrap "$bs" --id 0 --throttle 400 --idle-exit 5 \
	>"$tmp/w0.out" 2>"$tmp/w0.err" &
w0=$!
"$SCADLES" worker -c "$tmp/j1.json" --bootstrap "$bs" --id 1 --throttle 400 \
	>"$tmp/w1.out" 2>"$tmp/w1.err" &
w1=$!
pids="$pids $w0 $w1"
wait_trained "$tmp/w1.err" 800 "$w1"
kill -9 "$w1"
wait "$w1" 2>/dev/null || true
echo "worker 1 killed"
"$SCADLES" worker -c "$tmp/j1.json" --bootstrap "$bs" --id 1 --idle-exit 5 \
	>"$tmp/w1b.out" 2>"$tmp/w1b.err" || fail "restarted worker 1 exited $?"
wait "$w0" || fail "worker 0 exited $?"
wait "$a" || fail "aggregator exited $?"
for f in w0 w1b; do
	check_worker "$tmp/$f.out"
	check_committed "$tmp/$f.out"
done
[ "$(summary "$tmp/w1b.out" .job.seq_base)" -gt 0 ] || fail "the restarted worker's seqs started over"
grep -q 'restart: seqs continue' "$tmp/w1b.err" || fail "no restart line"
start=$(summary "$tmp/w1b.out" '.partitions[0].start')
[ "$start" -gt 0 ] || fail "the restarted worker did not resume at a committed offset"
echo "restarted worker resumed at offset $start, seq_base $(summary "$tmp/w1b.out" .job.seq_base)"
real_exactly_once 2 "$tmp/a.out" -- "$tmp/w0.out" "$tmp/w1b.out"
echo "ok on a real broker: worker killed and restarted, nothing skipped, exactly once"
