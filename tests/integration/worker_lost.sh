#!/usr/bin/env bash
# Records lost to retention are counted, never silent: a worker trains part
# of a topic and commits; then so much more is produced that the embedded
# broker's retention (about 5 MB per partition) deletes records past the
# committed offset. The next worker starts at the committed offset, finds
# the log starting later, and reports exactly the records it never saw:
# start + lost + consumed = end.
. "$(dirname "$0")/worker_common.inc"

start_broker ls.0:1
"$SCADLES" feed --bootstrap "$bs" --topic ls.0 --count 1000 --rate 5000 --data synth \
	--synth-n 2000 --quiet >"$tmp/feed1.out" 2>"$tmp/feed.err" || fail "feed failed"
write_config "$tmp/w.json" '[{"topic": "ls.0"}]' '{"source": {"group_id": "itest-lost"}}'
"$SCADLES" worker -c "$tmp/w.json" --bootstrap "$bs" --idle-exit 2 \
	>"$tmp/w1.out" 2>"$tmp/w1.err" || fail "first worker exited $?"
committed=$(summary "$tmp/w1.out" '.partitions[0].committed')
[ "$committed" -eq 1000 ] || fail "first worker committed $committed, expected 1000"

# About 7 MB more: retention deletes the oldest record batches.
"$SCADLES" feed --bootstrap "$bs" --topic ls.0 --count 9000 --rate 20000 --data synth \
	--synth-n 2000 --seed 2 --quiet >"$tmp/feed2.out" 2>>"$tmp/feed.err" || fail "feed failed"
"$SCADLES" worker -c "$tmp/w.json" --bootstrap "$bs" --idle-exit 2 \
	>"$tmp/w2.out" 2>"$tmp/w2.err" || fail "second worker exited $?"
cut -c 1-300 "$tmp/w2.out"
s() { summary "$tmp/w2.out" "$1"; }
lost=$(s .lost)
start=$(s '.partitions[0].start')
end=$(s '.partitions[0].end')
consumed=$(s .consumed)
[ "$lost" -gt 0 ] || fail "no record reported lost"
[ "$start" -eq 1000 ] || fail "second worker started at $start, expected the committed 1000"
[ "$end" -eq 10000 ] || fail "end offset $end, expected 10000"
[ $((start + lost + consumed)) -eq "$end" ] || fail "start $start + lost $lost + consumed $consumed != end $end"
[ "$(s .identity_ok)" = true ] || fail "accounting identity broken"
grep -q 'record(s) lost before offset' "$tmp/w2.err" || fail "the loss was not logged"
check_committed "$tmp/w2.out"
echo "lost: $lost records deleted by retention before being read, reported; start $start + lost + consumed $consumed = end $end"
echo "worker_lost: ok"
