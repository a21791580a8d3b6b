#!/usr/bin/env bash
# worker.window "auto" in a scadles job (2 workers, 1 aggregator): each
# worker announces its measured stream rate in its heartbeats, the
# aggregator sums the live workers' rates into every broadcast, and each
# worker batches on the window base_batch / sum (base_batch left at its
# default, 64 x 2 workers = 128), so that the job's batches add up to
# base_batch, split in proportion to the rates. Worker 0's topic is fed at
# 400 records/s and worker 1's at 100 (live, 8 s): the window comes out
# near 128 / 500 = 0.26 s, worker 0's batches near 102 and worker 1's near
# 26, and every record is trained. A standalone worker with "auto" is
# refused with an error naming the setting.
. "$(dirname "$0")/distributed_common.inc"

start_broker aw.0:1 aw.1:1 dj.grad:2 dj.model:2 dj.bcast:2 dj.inject:1 dj.ctl:1
for w in 0 1; do
	write_job "$tmp/j$w.json" "[{\"topic\": \"aw.$w\"}]" \
		"{\"source\": {\"group_id\": \"aw-$w\"}, \"worker\": {\"window\": \"auto\", \"b_max\": 256},
		  \"job\": {\"sync\": {\"policy\": \"scadles\"}}}"
done

"$SCADLES" aggregator -c "$tmp/j0.json" --bootstrap "$bs" --idle-exit 8 >"$tmp/a.out" 2>"$tmp/a.err" &
a=$!
pids="$pids $a"
ws=()
for w in 0 1; do
	"$SCADLES" worker -c "$tmp/j$w.json" --bootstrap "$bs" --id $w --idle-exit 4 \
		>"$tmp/w$w.out" 2>"$tmp/w$w.err" &
	ws+=($!)
	pids="$pids $!"
done
sleep 2
"$SCADLES" feed --bootstrap "$bs" --topic aw.0 --count 3200 --rate 400 --data synth \
	--synth-n 2000 --quiet >"$tmp/feed0.out" 2>"$tmp/feed0.err" &
f0=$!
"$SCADLES" feed --bootstrap "$bs" --topic aw.1 --count 800 --rate 100 --data synth \
	--synth-n 2000 --seed 2 --quiet >"$tmp/feed1.out" 2>"$tmp/feed1.err" &
f1=$!
wait $f0 || fail "feed 0 failed"
wait $f1 || fail "feed 1 failed"
for w in "${ws[@]}"; do
	timeout 120 tail --pid="$w" -f /dev/null || fail "a worker did not end (stalled)"
done
for w in "${ws[@]}"; do wait "$w" || fail "a worker exited $?"; done
wait "$a" || fail "aggregator exited $?"

fed=(3200 800)
mean=()
for w in 0 1; do
	o="$tmp/w$w.out"
	check_worker "$o" acked
	[ "$(summary "$o" '.trained - .orphaned')" -eq "${fed[$w]}" ] ||
		fail "worker $w trained $(summary "$o" .trained) (orphaned $(summary "$o" .orphaned)) of ${fed[$w]}"
	mean[$w]=$(summary "$o" '(.trained / .batches * 10 | round) / 10')
	# the auto window while the feeds ran: its log lines
	grep -q 'auto window' "$tmp/w$w.err" || fail "worker $w never set an auto window"
	wins=$(sed -n 's/.*auto window \([0-9.]*\) s: .*rate sum \([0-9.]*\).*/\1@\2/p' "$tmp/w$w.err" | tr '\n' ' ')
	echo "worker $w: trained $(summary "$o" .trained) in $(summary "$o" .batches) batches (mean ${mean[$w]});" \
		"auto windows (s@rate sum): $wins"
done
# the batches: base_batch 128 split 4:1 (102 and 26) when a round takes
# less than the window; a round that takes longer makes both larger, in the
# same proportion; until a broadcast carries the rate sum, a worker's own
# rate times the 2 workers stands for it (log lines "(estimated ...)")
awk -v a="${mean[0]}" -v b="${mean[1]}" 'BEGIN {exit !(a >= 60 && b >= 12 && a + b <= 300 && a / b >= 2.5 && a / b <= 6)}' ||
	fail "mean batches ${mean[0]} and ${mean[1]}, expected near 102 and 26"
# a window near 0.26 s was in force, from a rate sum a broadcast carried
# (not the start's estimate): one of worker 0's said values in [0.15, 0.4]
grep 'auto window' "$tmp/w0.err" | grep -v '(estimated' | sed -n 's/.*auto window \([0-9.]*\) s: .*/\1/p' |
	awk '$1 >= 0.15 && $1 <= 0.4 {ok = 1} END {exit !ok}' ||
	fail "no auto window near 0.26 s from a broadcast rate sum"
# and the job's summary holds a sum that came from a broadcast
[ "$(summary "$tmp/w0.out" .job.window_estimated)" = false ] ||
	fail "worker 0 ended on an estimated rate sum"

# a standalone worker cannot take its window from a job
jq 'del(.job)' "$tmp/j0.json" >"$tmp/alone.json"
"$SCADLES" worker -c "$tmp/alone.json" --bootstrap "$bs" --idle-exit 1 >"$tmp/alone.out" 2>"$tmp/alone.err" &&
	fail "a standalone worker with worker.window \"auto\" started"
grep -q '\$.worker.window: "auto" takes the window from a job' "$tmp/alone.err" ||
	fail "standalone error: $(cat "$tmp/alone.err")"
echo "auto_window: ok (mean batches ${mean[0]} and ${mean[1]} for rates 400 and 100, base_batch 128)"
