#!/usr/bin/env bash
# The model broadcast cannot be rolled back by a replay. For the bsp, asp and
# scadles policies, an authenticated job (2 workers, 1 aggregator, 2 shards)
# trains; while it does, a raw producer (kcat) re-publishes each shard's
# first broadcast record (the genuine, signed keyframe of version 0) three
# times. Before broadcast generations the workers installed it: their views
# went back to version 0 and a bsp job deadlocked. Now each worker refuses
# the replays (counted in its summary's job.model_rollback), holds a version
# above 1 at its end, and the job trains every record (trained - orphaned -
# redelivered = fed over both workers) and ends. Last, the final job's J.model
# gets replays of an early snapshot, and an aggregator taking the shard
# restores the final one. POLICIES (default: bsp asp scadles) picks some.
. "$(dirname "$0")/distributed_common.inc"

policies=${POLICIES:-bsp asp scadles}
# shellcheck disable=SC2086
start_policy_jobs rp $policies
n=3000
for p in $policies; do
	"$SCADLES" feed --bootstrap "$bs" --topic "rp.$p" --count $n --rate 8000 --data synth \
		--synth-n 2000 --quiet >"$tmp/feed.$p.out" 2>"$tmp/feed.$p.err" || fail "$p: feed failed"
	write_job "$tmp/$p.json" "[{\"topic\": \"rp.$p\"}]" \
		"{\"source\": {\"group_id\": \"rp-$p\"}, \"job\": {\"name\": \"rp$p\",
		  \"sync\": {\"policy\": \"$p\"}, \"keyframe_interval\": 5,
		  \"auth\": {\"key_file\": \"$tmp/job.key\"}}}"
	"$SCADLES" aggregator -c "$tmp/$p.json" --bootstrap "$bs" --no-create --idle-exit 8 \
		>"$tmp/$p.a.out" 2>"$tmp/$p.a.err" &
	a=$!
	pids="$pids $a"
	sleep 1
	ws=()
	for w in 0 1; do
		"$SCADLES" worker -c "$tmp/$p.json" --bootstrap "$bs" --id $w --throttle 300 \
			--idle-exit 4 >"$tmp/$p.w$w.out" 2>"$tmp/$p.w$w.err" &
		ws+=($!)
		pids="$pids $!"
	done
	wait_trained "$tmp/$p.w0.err" 300 "${ws[0]}"
	for s in 0 1; do
		for _ in $(seq 1 100); do
			kcat -b "$bs" -C -t "rp$p.bcast" -p $s -o beginning -c 1 -e -q -f '%s' \
				>"$tmp/$p.first$s" 2>/dev/null
			[ -s "$tmp/$p.first$s" ] && break
			sleep 0.1
		done
		[ -s "$tmp/$p.first$s" ] || fail "$p: no broadcast on shard $s"
		f="$tmp/$p.first$s"
		kcat -b "$bs" -P -t "rp$p.bcast" -p $s "$f" "$f" "$f" || fail "$p: kcat produce"
	done
	echo "$p: each shard's version-0 keyframe replayed 3 times"
	for w in "${ws[@]}"; do
		timeout 120 tail --pid="$w" -f /dev/null || fail "$p: a worker did not end (stalled)"
	done
	for w in "${ws[@]}"; do wait "$w" || fail "$p: a worker exited $?"; done
	wait "$a" || fail "$p: aggregator exited $?"
	trained=0
	vmin=$(summary "$tmp/$p.a.out" '[.shards[].version] | min')
	for w in 0 1; do
		o="$tmp/$p.w$w.out"
		check_worker "$o"
		trained=$((trained + $(summary "$o" '.trained - .orphaned - .redelivered')))
		rb=$(summary "$o" .job.model_rollback)
		v=$(summary "$o" .job.model_version)
		echo "$p: worker $w trained $(summary "$o" .trained), refused $rb replayed keyframe(s)," \
			"holds version $v (aggregator: $vmin)"
		[ "$rb" -ge 1 ] || fail "$p: worker $w refused no replayed keyframe"
		[ "$v" -gt 1 ] || fail "$p: worker $w holds version $v"
	done
	[ "$trained" -eq $n ] || fail "$p: trained - orphaned - redelivered = $trained, fed $n"
done
# J.model: the last job's first snapshot of shard 0 (genuine, signed, of an
# early version) published 3 times after its final one. An aggregator that
# takes the shard restores the snapshot covering the most of J.grad, the
# final one, not the replay that is newest in the log.
kcat -b "$bs" -C -t "rp$p.model" -p 0 -o beginning -c 1 -e -q -f '%s' >"$tmp/model0" 2>/dev/null
[ -s "$tmp/model0" ] || fail "$p: no J.model snapshot of shard 0"
kcat -b "$bs" -P -t "rp$p.model" -p 0 -k 0 "$tmp/model0" "$tmp/model0" "$tmp/model0" ||
	fail "$p: kcat produce"
final=$(summary "$tmp/$p.a.out" '.shards[] | select(.shard == 0) | .version')
"$SCADLES" aggregator -c "$tmp/$p.json" --bootstrap "$bs" --no-create --idle-exit 2 \
	>"$tmp/$p.a2.out" 2>"$tmp/$p.a2.err" || fail "$p: second aggregator exited $?"
restored=$(sed -n 's/.*shard 0: restored version \([0-9]*\) .*/\1/p' "$tmp/$p.a2.err")
echo "$p: J.model of shard 0 ends with 3 replays of an early snapshot; restored version ${restored:-none} (final $final)"
[ "${restored:-x}" = "$final" ] || fail "$p: restored version ${restored:-none}, the final snapshot is $final"
echo "ok: replayed keyframes refused on every policy; every job trained its records and ended; a replayed snapshot is not restored"
