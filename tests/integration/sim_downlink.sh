#!/usr/bin/env bash
# The simulator's downlink against the Kafka runtime's: the same job (bsp, 2
# workers, 2 shards, q8 downlink, keyframe_interval 4) runs 10 rounds on the
# embedded broker and 10 server steps in `scadles sim` (downlink_bcast);
# each worker's job.bytes_down must equal its device's bytes_down_devices
# entry. Both count version 0's keyframe (a worker starts from J.bcast's
# model, a device reads it before its first step), then versions 1-10
# (keyframes at 0, 5 and 10, deltas between), each record with the shard's
# applied-seq vector. Version 10 is a keyframe, so the aggregator's release
# adds no final one; the workers run no evaluation. Both run the job engine
# (core/job.c), so the uplink matches too: the update codec is q8 (a payload
# of fixed size) and the simulator's bytes_up, the wire messages of its
# devices' 40 updates, must equal the sum of the workers' job.bytes_up.
. "$(dirname "$0")/distributed_common.inc"
# The run is compared with a simulator whose devices are in every round: a
# worker waits for its group's first assignment (3 s on the embedded broker)
# without leaving the barriers (job.leave_grace 10 s), so neither closes
# rounds alone.
# Unauthenticated (job.auth.mode none): the simulator signs nothing, and an
# authenticated job's records are 32 bytes (the tag) longer each.
job='{"worker": {"batch": "fixed", "b": 64},
      "job": {"sync": {"policy": "bsp"}, "codec": {"name": "q8"}, "downlink": {"name": "q8"},
              "keyframe_interval": 4, "leave_grace": 10, "auth": {"mode": "none"}}}'
start_broker sd.0:1 sd.1:1 dj.grad:2 dj.model:2 dj.bcast:2 dj.ctl:1
for w in 0 1; do
	# 640 records, 64 a batch: 10 updates per shard and worker, 10 rounds.
	"$SCADLES" feed --bootstrap "$bs" --topic "sd.$w" --count 640 --rate 20000 --data synth \
		--synth-n 2000 --seed $((w + 1)) --quiet >"$tmp/feed$w.out" 2>"$tmp/feed$w.err" ||
		fail "feed failed"
	write_job "$tmp/j$w.json" "[{\"topic\": \"sd.$w\"}]" \
		"$(jq -n --argjson j "$job" --arg g "sd-$w" '$j * {source: {group_id: $g}}')"
done
"$SCADLES" aggregator -c "$tmp/j0.json" --bootstrap "$bs" --idle-exit 6 >"$tmp/a.out" 2>"$tmp/a.err" &
a=$!
pids="$pids $a"
sleep 1
for w in 0 1; do
	"$SCADLES" worker -c "$tmp/j$w.json" --bootstrap "$bs" --id "$w" --idle-exit 3 \
		>"$tmp/w$w.out" 2>"$tmp/w$w.err" &
	pids="$pids $!"
	eval "w$w=$!"
done
wait "$w0" || fail "worker 0 exited $?"
wait "$w1" || fail "worker 1 exited $?"
wait "$a" || fail "aggregator exited $?"

# The simulator: the same model, optimizer, seed, job section and codec.
jq '{model, optim, train, job, worker,
     data: {source: "synthetic", synthetic: {train: 2000, test: 200, classes: 10, noise: 1.0}},
     sim: {devices: 2, shards: 2, policy: "bsp", codec: "q8", rates: "S10",
           max_steps: 10, max_time: 1000, eval_every: 100, downlink_bcast: true}}' \
	"$tmp/j0.json" >"$tmp/sim.json"
"$SCADLES" sim -c "$tmp/sim.json" >"$tmp/sim.out" 2>"$tmp/sim.err" || fail "sim exited $?"
end=$(tail -n 1 "$tmp/sim.out")
[ "$(echo "$end" | jq .step)" -eq 10 ] || fail "sim stopped at step $(echo "$end" | jq .step)"

up=0
for w in 0 1; do
	f="$tmp/w$w.out"
	check_worker "$f" acked
	up=$((up + $(summary "$f" .job.bytes_up)))
	read -r down recs keys ver < <(summary "$f" \
		'.job | "\(.bytes_down) \(.model_records) \(.model_keyframes) \(.model_version)"')
	sim=$(echo "$end" | jq ".bytes_down_devices[$w]")
	echo "worker $w: $down bytes down in $recs records ($keys keyframes, version $ver); simulator device $w: $sim"
	[ "$ver" -eq 10 ] || fail "worker $w ended at version $ver, want 10"
	[ "$recs" -eq 22 ] && [ "$keys" -eq 6 ] ||
		fail "worker $w read $recs records with $keys keyframes, want 22 with 6"
	[ "$down" -eq "$sim" ] || fail "worker $w read $down bytes, the simulator's device $w $sim"
done
[ "$(summary "$tmp/a.out" .bytes_bcast)" -eq "$down" ] ||
	fail "the aggregator broadcast $(summary "$tmp/a.out" .bytes_bcast) bytes, each worker read $down"
sim_up=$(echo "$end" | jq .bytes_up)
echo "uplink: workers $up bytes, simulator $sim_up"
[ "$up" -eq "$sim_up" ] || fail "the workers sent $up bytes of updates, the simulator's devices $sim_up"
echo "ok: downlink bytes per worker ($down) and uplink bytes ($up) equal in the Kafka runtime and the simulator"
