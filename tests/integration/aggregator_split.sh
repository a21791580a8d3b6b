#!/usr/bin/env bash
# Aggregator group: two aggregators in one consumer group split the 4 shards
# (each holds some, together all), updates from fake workers are applied by
# whichever owns the shard, and the published model equals the expected one.
# A graceful stop of one hands its shards over through a final snapshot: no
# update is applied twice (the applied counts add up exactly).
. "$(dirname "$0")/aggregator_common.inc"
start_broker
cfg="$tmp/job.json"
write_job "$cfg" split

agg a -c "$cfg"
apid=$lastpid
agg b -c "$cfg"
bpid=$lastpid
wait_held a 30 || fail "aggregator a took no shard"
wait_held b 30 || fail "aggregator b took no shard"
sleep 1
produce "$cfg" --seq-to 30 --rate 400
wait_check "$cfg" 30 20 || fail "J.model differs from the expected shards with two aggregators"
held_a=$(grep -o "progress: .*" "$tmp/a.err" | tail -1 | sed 's/.*shards=\[\([^]]*\)\].*/\1/')
held_b=$(grep -o "progress: .*" "$tmp/b.err" | tail -1 | sed 's/.*shards=\[\([^]]*\)\].*/\1/')
echo "a holds [$held_a], b holds [$held_b]"
[ -n "$held_a" ] && [ -n "$held_b" ] || fail "the shards were not split"

# b leaves gracefully: a takes b's shards from their final snapshots
kill -TERM "$bpid"
wait "$bpid" || fail "aggregator b exited with an error"
produce "$cfg" --seq-from 31 --seq-to 45 --rate 400
wait_check "$cfg" 45 30 || fail "J.model differs from the expected shards after b left"
kill -TERM "$apid"
wait "$apid" || fail "aggregator a exited with an error"
na=$(summary a .applied)
nb=$(summary b .applied)
echo "applied: a $na, b $nb (of 540); a restored $(summary a .restored) shards"
[ $((na + nb)) = 540 ] || fail "applied $na + $nb != 540: an update was applied twice or never"
[ "$nb" -gt 0 ] && [ "$na" -gt 0 ] || fail "one aggregator applied nothing"
echo "PASS"
