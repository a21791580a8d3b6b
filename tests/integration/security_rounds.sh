#!/usr/bin/env bash
# Rounds always close. For the bsp and scadles policies, an authenticated
# job of 3 workers where workers 0 and 1 train and "worker 2" is hostile: a
# raw producer (kcat) keeps it live with heartbeats signed with its key
# (tests/integration/forge.c) and sends one update refused as ahead (seq
# 5000). The refused update takes worker 2's turn in its round, and
# job.sync.round_timeout (1 s here) closes every other round without it:
# the aggregator logs each such round with the worker it did not wait for
# and counts it (rounds_timed_out), and the job trains every record
# (trained - orphaned - redelivered = fed) and ends. Without the timeout a
# worker that heartbeats and never sends held bsp for good. POLICIES
# (default: bsp scadles) picks some.
. "$(dirname "$0")/distributed_common.inc"

build_forge

policies=${POLICIES:-bsp scadles}
# shellcheck disable=SC2086
start_policy_jobs rr $policies
k="$tmp/job.key"
n=1200
for p in $policies; do
	"$SCADLES" feed --bootstrap "$bs" --topic "rr.$p" --count $n --rate 8000 --data synth \
		--synth-n 1000 --quiet >"$tmp/feed.$p.out" 2>"$tmp/feed.$p.err" || fail "$p: feed failed"
	write_job "$tmp/$p.json" "[{\"topic\": \"rr.$p\"}]" \
		"{\"source\": {\"group_id\": \"rr-$p\"}, \"job\": {\"name\": \"rr$p\", \"workers\": 3,
		  \"sync\": {\"policy\": \"$p\", \"round_timeout\": 1},
		  \"auth\": {\"key_file\": \"$k\"}}}"
	# worker 2's heartbeats, every 0.5 s, from before the job starts
	(
		while :; do
			FORGE_JOB=rr$p "$tmp/forge" heartbeat "$tmp/$p.hb" 2 2 "$k" || exit 1
			kcat -b "$bs" -P -t "rr$p.ctl" -p 0 "$tmp/$p.hb" 2>/dev/null || exit 1
			sleep 0.5
		done
	) &
	hb=$!
	pids="$pids $hb"
	"$SCADLES" aggregator -c "$tmp/$p.json" --bootstrap "$bs" --no-create --idle-exit 8 \
		>"$tmp/$p.a.out" 2>"$tmp/$p.a.err" &
	a=$!
	pids="$pids $a"
	sleep 1
	ws=()
	for w in 0 1; do
		"$SCADLES" worker -c "$tmp/$p.json" --bootstrap "$bs" --id $w --idle-exit 6 \
			>"$tmp/$p.w$w.out" 2>"$tmp/$p.w$w.err" &
		ws+=($!)
		pids="$pids $!"
	done
	wait_trained "$tmp/$p.w0.err" 64 "${ws[0]}"
	FORGE_JOB=rr$p "$tmp/forge" update "$tmp/$p.ahead" 2 0 5000 8 12725 0.01 2 "$k" ||
		fail "$p: forge update"
	kcat -b "$bs" -P -t "rr$p.grad" -p 0 "$tmp/$p.ahead" || fail "$p: kcat produce"
	for w in "${ws[@]}"; do
		timeout 180 tail --pid="$w" -f /dev/null || fail "$p: a worker did not end (stalled)"
	done
	for w in "${ws[@]}"; do wait "$w" || fail "$p: a worker exited $?"; done
	wait "$a" || fail "$p: aggregator exited $?"
	kill "$hb" 2>/dev/null
	wait "$hb" 2>/dev/null || true
	net=0
	for w in 0 1; do
		check_worker "$tmp/$p.w$w.out"
		net=$((net + $(summary "$tmp/$p.w$w.out" '.trained - .orphaned - .redelivered')))
	done
	to=$(summary "$tmp/$p.a.out" .rounds_timed_out)
	echo "$p: trained - orphaned - redelivered = $net of $n; rounds timed out $to," \
		"steps $(summary "$tmp/$p.a.out" .steps), rejected ahead $(summary "$tmp/$p.a.out" .rejected.ahead)"
	[ "$net" -eq $n ] || fail "$p: trained - orphaned - redelivered = $net, fed $n"
	[ "$to" -ge 1 ] || fail "$p: no round closed by the round timeout"
	[ "$(summary "$tmp/$p.a.out" .rejected.ahead)" -ge 1 ] || fail "$p: the ahead update was not refused"
	grep -q "closed after .* without worker(s) 2 " "$tmp/$p.a.err" ||
		fail "$p: no log line names the worker the round did not wait for"
done
echo "ok: a worker that heartbeats and never sends holds no round; every job trained its records"
