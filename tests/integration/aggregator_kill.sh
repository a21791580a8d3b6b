#!/usr/bin/env bash
# Aggregator crash: two aggregators share the shards while fake workers send
# updates; one is killed with SIGKILL mid-run. After the group's session
# timeout the survivor takes over its shards from their latest J.model
# snapshots, replays J.grad from the offsets they include, and the final
# model equals the expected one exactly: every (worker, seq) applied once.
. "$(dirname "$0")/aggregator_common.inc"
start_broker
cfg="$tmp/job.json"
write_job "$cfg" crash

agg a -c "$cfg"
apid=$lastpid
agg b -c "$cfg"
bpid=$lastpid
wait_held a 30 || fail "aggregator a took no shard"
wait_held b 30 || fail "aggregator b took no shard"
sleep 1
produce "$cfg" --seq-to 60 --rate 300 &
ppid=$!
pids="$pids $ppid"
sleep 1.5
grep -q "published=[1-9]" "$tmp/a.err" || sleep 1
kill -9 "$apid"
killed_at=$(date +%s.%N)
held_a=$(grep -o "progress: .*" "$tmp/a.err" | tail -1 | sed 's/.*shards=\[\([^]]*\)\].*/\1/')
echo "killed aggregator a holding [$held_a]"
[ -n "$held_a" ] || fail "aggregator a held no shard when it was killed"
wait "$ppid" || fail "producer failed"
wait_check "$cfg" 60 40 || fail "J.model differs from the expected shards after the takeover"
took=$(echo "$(date +%s.%N) - $killed_at" | bc)
grep "restored version" "$tmp/b.err" || true
grep -q "restored version [1-9]" "$tmp/b.err" || fail "b did not restore a snapshot with updates in it"
kill -TERM "$bpid"
wait "$bpid" || fail "aggregator b exited with an error"
check "$cfg" 60 || fail "J.model differs after b's final snapshot"
echo "takeover + replay complete ${took}s after the kill; b applied $(summary b .applied), duplicates $(summary b .duplicates)"
echo "PASS"
