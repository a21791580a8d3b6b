#!/usr/bin/env bash
# Persistence backpressure: a burst of 6000 records against a throttled worker
# whose stream holds 512 samples. The worker must pause the partitions at the
# high watermark and resume them below the low one (the backlog waits in
# Kafka as consumer lag), train every record, lose none, commit to the end,
# and report an exact accounting identity.
. "$(dirname "$0")/worker_common.inc"

start_broker bp.0:2
"$SCADLES" feed --bootstrap "$bs" --topic bp.0 --count 6000 --rate 6000 --data synth \
	--synth-n 2000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
write_config "$tmp/w.json" '[{"topic": "bp.0"}]' \
	'{"streams": {"policy": "persist", "cap": 512, "high_watermark": 0.8, "low_watermark": 0.5}}'
"$SCADLES" worker -c "$tmp/w.json" --bootstrap "$bs" --throttle 2000 --idle-exit 2 \
	>"$tmp/w.out" 2>"$tmp/w.err" || fail "worker exited $?"
cat "$tmp/w.out" | cut -c 1-300
grep '^worker: ' "$tmp/w.err" | head -n 4

[ "$(summary "$tmp/w.out" .identity_ok)" = true ] || fail "accounting identity broken"
for k in received consumed trained; do
	[ "$(summary "$tmp/w.out" ".$k")" -eq 6000 ] || fail "$k = $(summary "$tmp/w.out" ".$k"), expected 6000"
done
for k in dropped rejected lost returned buffered inflight held; do
	[ "$(summary "$tmp/w.out" ".$k")" -eq 0 ] || fail "$k = $(summary "$tmp/w.out" ".$k"), expected 0"
done
pauses=$(summary "$tmp/w.out" .pauses)
resumes=$(summary "$tmp/w.out" .resumes)
peak=$(summary "$tmp/w.out" .peak_buffered)
[ "$pauses" -ge 2 ] && [ "$resumes" -ge 2 ] || fail "pauses $pauses, resumes $resumes: no backpressure"
[ "$peak" -le 512 ] || fail "peak buffered $peak exceeds the cap of 512"
# While paused, the backlog shows up as consumer lag, not in memory.
grep -Eq 'lag [1-9][0-9]*  paused [1-9]' "$tmp/w.err" || fail "no progress line with lag while paused"
check_committed "$tmp/w.out"
echo "backpressure: 6000 trained, $pauses pauses / $resumes resumes, peak buffer $peak <= 512, lost 0"
echo "worker_backpressure: ok"
