#!/usr/bin/env bash
# Aggregator stall (a would-be zombie): one of two aggregators is stopped
# (SIGSTOP) past the group's session timeout while updates flow; the other
# takes its shards over. When the stalled one resumes, librdkafka reports
# its assignment as lost: it drops those shards without a final snapshot
# (which could overwrite the new owner's), rejoins, and the final model
# still equals the expected one exactly.
. "$(dirname "$0")/aggregator_common.inc"
start_broker
cfg="$tmp/job.json"
write_job "$cfg" stall

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
kill -STOP "$apid"
for _ in $(seq 1 150); do
	grep -q "restored version [1-9]" "$tmp/b.err" && break
	sleep 0.1
done
grep -q "restored version [1-9]" "$tmp/b.err" || fail "b did not take over a's shards"
kill -CONT "$apid"
wait "$ppid" || fail "producer failed"
sleep 2
wait_check "$cfg" 60 30 || fail "J.model differs from the expected shards"
kill -TERM "$apid" "$bpid"
wait "$apid" || fail "aggregator a exited with an error"
wait "$bpid" || fail "aggregator b exited with an error"
check "$cfg" 60 || fail "J.model differs after both stopped"
grep "assignment lost" "$tmp/a.err" || fail "a did not notice its lost assignment"
echo "a dropped $(summary a .assignments_lost) shard(s) without publishing; final shards exact"
echo "PASS"
