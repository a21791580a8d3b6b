#!/usr/bin/env bash
# Attacks on an authenticated job (asp, 2 shards, job key from a file, update
# norm limit 1e4): while worker 0 trains, a raw producer (kcat) writes forged
# records built by tests/integration/forge.c: on J.grad an unsigned update
# and one signed with worker 1's key, both claiming worker 0; as worker 1
# (its own key) a 1e30 update, two 3.4e38 updates (both refused by the norm
# limit here; an overflowing step's undo is tests/unit/test_server_limits.c's)
# and the 20-byte sparse
# DoS payload; worker 0's update at seq 5000 (signed with its key: a
# leaked key or a buggy worker); on J.bcast an unsigned keyframe and one
# signed with the aggregators' key, both at version 2^62 with zero
# parameters, a signed one with NaN parameters, and a signed one of finite
# 3e38 parameters (the job sets job.limits.model_max_abs 0, so only the
# worker's loss check stands: the first layer's sums overflow, the loss on
# its last batch is not finite, and the worker keeps its model, counted as
# model_loss). Each is rejected and counted under its kind, no worker-0
# update is dropped as a duplicate (each shard's version equals worker 0's
# last seq: all its updates applied, no forged one), the broadcast shards
# verify and are finite, and the worker ignores the forged model records.
. "$(dirname "$0")/distributed_common.inc"

build_forge
forge() { FORGE_JOB=dj "$tmp/forge" "$@" || fail "forge $*"; } # dj: write_job's job

start_broker sa.0:1 dj.grad:2 dj.model:2 dj.bcast:2 dj.inject:1 dj.ctl:1
head -c 24 /dev/urandom | base64 >"$tmp/job.key"
"$SCADLES" feed --bootstrap "$bs" --topic sa.0 --count 3000 --rate 8000 --data synth \
	--synth-n 2000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
write_job "$tmp/j0.json" '[{"topic": "sa.0"}]' \
	"{\"source\": {\"group_id\": \"sa-0\"}, \"job\": {\"snapshot_interval\": 0.3,
	  \"auth\": {\"key_file\": \"$tmp/job.key\"},
	  \"limits\": {\"max_norm\": 10000, \"model_max_abs\": 0}}}"
# the key never shows in the resolved configuration
"$SCADLES" config --check -c "$tmp/j0.json" >"$tmp/check.out" 2>&1 || fail "config --check"
grep -qF "$(cat "$tmp/job.key")" "$tmp/check.out" && fail "config --check printed the key"

"$SCADLES" aggregator -c "$tmp/j0.json" --bootstrap "$bs" --idle-exit 8 >"$tmp/a.out" 2>"$tmp/a.err" &
a=$!
pids="$pids $a"
sleep 1
"$SCADLES" worker -c "$tmp/j0.json" --bootstrap "$bs" --id 0 --throttle 300 --idle-exit 4 \
	>"$tmp/w0.out" 2>"$tmp/w0.err" &
w0=$!
pids="$pids $w0"
wait_trained "$tmp/w0.err" 300 "$w0"
# the worker holds a genuine shard 0 before the forged model records come
for _ in $(seq 1 100); do
	n=$(kcat -b "$bs" -C -t dj.bcast -p 0 -o beginning -e -q -f 'x\n' 2>/dev/null | wc -l)
	[ "$n" -ge 2 ] && break
	sleep 0.1
done
[ "$n" -ge 2 ] || fail "no shard broadcast on dj.bcast"
sleep 1

# shard 0 holds parameters [0, 12725) of the 25450 of the model
n0=12725
k="$tmp/job.key"
forge update "$tmp/f1" 0 0 1 8 $n0 0.5 none "$k"     # unsigned, as worker 0
forge update "$tmp/f2" 0 0 1 8 $n0 0.5 1 "$k"        # worker 1's key, as worker 0
forge update "$tmp/f3" 1 0 1 8 $n0 1e30 1 "$k"       # worker 1: 1e30
forge update "$tmp/f4" 1 0 2 8 $n0 3.4e38 1 "$k"     # worker 1: 3.4e38, twice
forge update "$tmp/f5" 1 0 3 8 $n0 3.4e38 1 "$k"
forge dos "$tmp/f6" 1 0 4 1 "$k"                     # worker 1: the sparse DoS payload
forge update "$tmp/f7" 0 0 5000 8 $n0 0.01 0 "$k"    # worker 0's own key, seq 5000
forge keyframe "$tmp/m1" 0 4611686018427387904 0 $n0 0 none "$k"
forge keyframe "$tmp/m2" 0 4611686018427387904 0 $n0 0 agg "$k"
forge keyframe "$tmp/m3" 0 100000 0 $n0 nan agg "$k"   # NaN parameters, a plausible version
forge keyframe "$tmp/m4" 0 100001 0 $n0 3e38 agg "$k"  # finite, and the loss overflows
kcat -b "$bs" -P -t dj.grad -p 0 "$tmp"/f1 "$tmp"/f2 "$tmp"/f3 "$tmp"/f4 "$tmp"/f5 "$tmp"/f6 \
	"$tmp"/f7 || fail "kcat produce to dj.grad"
kcat -b "$bs" -P -t dj.bcast -p 0 "$tmp"/m1 "$tmp"/m2 "$tmp"/m3 "$tmp"/m4 ||
	fail "kcat produce to dj.bcast"
echo "forged records produced"

wait "$w0" || fail "worker 0 exited $?"
wait "$a" || fail "aggregator exited $?"
check_worker "$tmp/w0.out" acked
[ "$(summary "$tmp/w0.out" .trained)" -eq 3000 ] || fail "trained $(summary "$tmp/w0.out" .trained) of 3000"
echo "aggregator rejected: $(summary "$tmp/a.out" '.rejected | tostring')," \
	"duplicates $(summary "$tmp/a.out" .duplicates), rolled back $(summary "$tmp/a.out" .rolled_back)"
[ "$(summary "$tmp/a.out" .authenticated)" = true ] || fail "the aggregator was not authenticated"
[ "$(summary "$tmp/a.out" .rejected.auth)" -eq 2 ] || fail "auth rejections"
[ "$(summary "$tmp/a.out" .rejected.limit)" -eq 3 ] || fail "limit rejections"
[ "$(summary "$tmp/a.out" .rejected.payload)" -eq 1 ] || fail "payload rejections"
[ "$(summary "$tmp/a.out" .rejected.ahead)" -eq 1 ] || fail "ahead rejections"
[ "$(summary "$tmp/a.out" .rejected_total)" -eq 7 ] || fail "rejections in all"
[ "$(summary "$tmp/a.out" .duplicates)" -eq 0 ] || fail "honest updates taken as duplicates"
grep -q "rejected ahead record .*worker 0" "$tmp/a.err" || fail "the seq jump was not logged"
check_exactly_once "$tmp/a.out" "$tmp/w0.out"
echo "worker: model_bad $(summary "$tmp/w0.out" .job.model_bad)," \
	"auth $(summary "$tmp/w0.out" .job.model_auth_bad), jump $(summary "$tmp/w0.out" .job.model_jump)," \
	"non-finite $(summary "$tmp/w0.out" .job.model_nonfinite), loss $(summary "$tmp/w0.out" .job.model_loss)"
[ "$(summary "$tmp/w0.out" .job.model_auth_bad)" -ge 1 ] || fail "unsigned model record not refused"
[ "$(summary "$tmp/w0.out" .job.model_jump)" -ge 1 ] || fail "far-ahead model record not refused"
[ "$(summary "$tmp/w0.out" .job.model_nonfinite)" -ge 1 ] || fail "NaN model record not refused"
[ "$(summary "$tmp/w0.out" .job.model_loss)" -ge 1 ] || fail "the 3e38 model was installed"
grep -q "broadcast model refused: the loss on this worker" "$tmp/w0.err" || fail "the loss refusal was not logged"
v=$(summary "$tmp/w0.out" .job.model_version)
[ "$v" -lt 1000000 ] || fail "the worker holds model version $v"
# the newest genuine broadcast records (the final keyframes) verify under
# the aggregators' key and are finite
for s in 0 1; do
	kcat -b "$bs" -C -t dj.bcast -p $s -o -1 -c 1 -e -q -f '%s' >"$tmp/last$s" 2>/dev/null
	[ "$s" -eq 0 ] && cnt=$n0 || cnt=$((25450 - n0))
	"$tmp/forge" check - "$tmp/last$s" $s $cnt "$k" || fail "shard $s record"
done
grep -qF "$(cat "$tmp/job.key")" "$tmp"/*.err "$tmp"/*.out && fail "a log printed the key"
echo "ok: every forged record rejected and counted; every honest update applied once"
