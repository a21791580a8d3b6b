#!/usr/bin/env bash
# A 3-node Apache Kafka cluster under a fault: starts its own KRaft cluster
# (scripts/kafka.sh, KAFKA_NODES=3: combined broker+controller nodes,
# default.replication.factor 3, min.insync.replicas 2) with client ports
# SCADLES_CLUSTER_KAFKA_PORT..+2 (19494..19496; controllers on the next three)
# and stops it at the end. A job (2 shards, asp, two workers) creates its
# topics with the broker's replication factor (job.replication -1: 3); its
# producers are idempotent (acks=all). Mid-run the leader of J.grad partition
# 0 is killed with SIGKILL. Checks: the job completes; every record of the
# two 3000-record data topics is trained and committed (0 lost); every update
# a worker sent was acknowledged, none failed, and each shard's final version
# equals the sum of the workers' last seqs (0 updates lost or applied twice).
# Records are trained at least once (a revoked partition is read again from
# its committed offset), so a worker may train more than its topic holds.
# The clients' socket.timeout.ms is 10 s (librdkafka's default is 60 s): a
# request queued for the dead node, the group coordinator's among them,
# times out and is sent to its successor sooner. A worker whose partition
# was revoked waits three times its --idle-exit for the group to assign it
# again; the aggregator's --idle-exit (60 s) outlasts that rejoin.
# Skipped (77) without Java or with SCADLES_REAL_KAFKA=0.
. "$(dirname "$0")/own_kafka.inc"
export KAFKA_NODES=3 KAFKA_SECURITY=plaintext
t0=$(date +%s)
own_kafka_up kafka-cluster "${SCADLES_CLUSTER_KAFKA_PORT:-19494}"
echo "cluster $bs up after $(($(date +%s) - t0)) s"
run="lk$$x$(date +%s)"
n=3000

"$SCADLES" feed --bootstrap "$bs" --prefix "$run.d" --topics 2 --count $n --rate 6000 \
	--data synth --synth-n 2000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
for w in 0 1; do
	write_job "$tmp/j$w.json" "[{\"topic\": \"$run.d.$w\"}]" \
		"{\"source\": {\"group_id\": \"$run-w$w\"}, \"job\": {\"name\": \"$run\", \"session_timeout\": 30},
		  \"kafka\": {\"fetch.wait.max.ms\": 20, \"socket.timeout.ms\": 10000}}"
done
job_aggregator "$tmp/j0.json" a 60
kcat -L -b "$bs" -t "$run.grad" >"$tmp/md.txt" 2>/dev/null || fail "no metadata for $run.grad"
grep -q 'replicas: [1-3],[1-3],[1-3],' "$tmp/md.txt" || fail "$run.grad is not replicated 3 times: $(cat "$tmp/md.txt")"
grep -E 'partition [0-9]' "$tmp/md.txt" | sed 's/^ */J.grad /'
job_workers --throttle 300 --idle-exit 20
wait_trained "$tmp/w0.err" 800 "$w0"
leader=$(kafka leader "$run.grad" 0) || fail "no leader for $run.grad [0]"
kafka kill "$leader" >>"$tmp/kafka-up.log" 2>&1 || fail "could not kill node $leader"
echo "node $leader (leader of $run.grad [0]) killed with SIGKILL at $(grep -Eo 'trained [0-9]+' "$tmp/w0.err" | tail -n 1)"
for _ in $(seq 1 60); do
	now=$(kcat -L -b "$bs" -t "$run.grad" -m 5 2>/dev/null | sed -n 's/^ *partition 0, leader \([0-9]*\),.*/\1/p')
	[ -n "$now" ] && [ "$now" != "$leader" ] && break
	sleep 1
done
echo "new leader of $run.grad [0]: ${now:-none}"
# Records are trained at least once: a partition revoked while the group
# coordinator moves is read again from its committed offset.
job_check $n ge
echo "kafka_cluster_leader_kill: ok ($(($(date +%s) - t0)) s)"
