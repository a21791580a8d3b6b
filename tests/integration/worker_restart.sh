#!/usr/bin/env bash
# Crash and resume: a throttled worker is killed with SIGKILL mid-stream; a
# new worker in the same group must resume exactly at the committed offsets
# (start + consumed = end on every partition: nothing skipped, nothing read
# twice), train the rest, and commit to the end. Over both runs, trained
# covers every record produced. A third start with nothing new exits after
# --idle-exit (idle time counts from the assignment once the ends are known).
. "$(dirname "$0")/worker_common.inc"

start_broker rs.0:2 rs.1:2
"$SCADLES" feed --bootstrap "$bs" --prefix rs --topics 2 --count 3000 --rate 6000 --data synth \
	--synth-n 2000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
produced=6000
write_config "$tmp/w.json" '[{"topic": "rs.0"}, {"topic": "rs.1"}]' \
	'{"streams": {"policy": "persist", "cap": 1024}, "worker": {"progress_interval": 0.2}}'

"$SCADLES" worker -c "$tmp/w.json" --bootstrap "$bs" --throttle 800 >"$tmp/w1.out" 2>"$tmp/w1.err" &
w1=$!
pids="$pids $w1"
wait_trained "$tmp/w1.err" 1500 "$w1"
kill -9 "$w1"
wait "$w1" 2>/dev/null || true
grep -q '^summary: ' "$tmp/w1.out" && fail "a killed worker printed a summary"
trained1=$(grep -Eo 'trained [0-9]+' "$tmp/w1.err" | tail -n 1 | cut -d' ' -f2)
echo "first worker killed after training >= $trained1 records"

"$SCADLES" worker -c "$tmp/w.json" --bootstrap "$bs" --idle-exit 2 >"$tmp/w2.out" 2>"$tmp/w2.err" ||
	fail "second worker exited $?"
cut -c 1-300 "$tmp/w2.out"
s() { summary "$tmp/w2.out" "$1"; }
[ "$(s .identity_ok)" = true ] || fail "accounting identity broken"
[ "$(s .lost)" -eq 0 ] || fail "lost $(s .lost)"
[ "$(s '.partitions | length')" -eq 4 ] || fail "expected 4 partitions: $(s .partitions)"
check_committed "$tmp/w2.out"
started=$(s '[.partitions[] | (if .start < 0 then 0 else .start end)] | add')
consumed=$(s .consumed)
[ "$started" -gt 0 ] || fail "nothing was committed by the first worker"
[ $((started + consumed)) -eq "$produced" ] ||
	fail "resumed at $started committed + consumed $consumed != $produced produced"
[ "$(s .trained)" -eq "$consumed" ] || fail "second worker left records untrained"
total=$((trained1 + $(s .trained)))
[ "$total" -ge "$produced" ] || fail "trained over both runs $total < produced $produced"
echo "restart: resumed at $started committed offsets, consumed $consumed more; trained >= $total of $produced"

# A third start on the feed read to its end, nothing new produced: the
# worker receives nothing, and its idle time counts from its assignment (the
# partitions' ends known and reached), so it exits after --idle-exit instead
# of waiting for records that never come. Bound: the group's rebalance (at
# most the 6-s session timeout on the embedded broker) + 2 s + slack.
t3=$(date +%s)
timeout 60 "$SCADLES" worker -c "$tmp/w.json" --bootstrap "$bs" --idle-exit 2 >"$tmp/w3.out" 2>"$tmp/w3.err" ||
	fail "third worker (caught up, nothing new) exited $? (124: never idle-exited)"
t3=$(($(date +%s) - t3))
grep -q 'stopped (idle)' "$tmp/w3.err" || fail "third worker stopped for another reason"
[ "$(summary "$tmp/w3.out" .consumed)" -eq 0 ] || fail "third worker consumed $(summary "$tmp/w3.out" .consumed)"
[ "$(summary "$tmp/w3.out" '.partitions | length')" -eq 4 ] || fail "third worker held no partitions"
check_committed "$tmp/w3.out"
echo "caught-up restart: idle exit after ${t3} s, 0 consumed, every partition at its end"
echo "worker_restart: ok"
