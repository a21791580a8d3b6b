#!/usr/bin/env bash
# A bsp worker whose job has no aggregator (default intervals, not the
# short ones of the other tests; kafka.fetch.wait.max.ms 500, librdkafka's
# default, where the job's own consumers default to 10 for round latency
# and then fetch 100 times a second each, more than the 1% asserted here): it trains its first batch, sends the
# update, and its policy then waits for a model that never comes. While it
# waits it sleeps: over 4 s of the wait its CPU time (/proc) stays under 1%
# of a core (4 clock ticks) -- the whole process on Kafka
# (SCADLES_KAFKA=host:port, worker_no_aggregator_real_kafka.sh); on the
# embedded broker its main thread (scadles' loop), as librdkafka's mock
# broker answers each fetch at once where Kafka holds it for
# fetch.wait.max.ms (its fetch threads use about 2% there, printed). It
# stops as idle
# once it waited --idle-exit (2 s) + job.session_timeout (2 s) +
# job.sync.round_timeout (6 s), with summary reason "idle: no model", no
# record lost and its untrained records left uncommitted (returned).
if [ -n "${NA_REAL:-}" ]; then
	. "$(dirname "$0")/distributed_real.inc"
	pre=$run
else
	. "$(dirname "$0")/distributed_common.inc"
	pre=na
	start_broker na.0:1 na.grad:1 na.model:1 na.bcast:1 na.inject:1 na.ctl:1
fi
"$SCADLES" feed --bootstrap "$bs" --topic $pre.0 --count 1000 --rate 8000 --data synth \
	--synth-n 500 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
# librdkafka's and scadles' default intervals (the other tests' are shorter)
jq -n --arg p "$pre" '{
  model: {input: [1, 28, 28], layers: [{type: "flatten"}, {type: "dense", units: 32},
          {type: "relu"}, {type: "dense", units: 10}]},
  source: {group_id: $p, topics: [{topic: "\($p).0"}]},
  streams: {format: "raw", label: "key", scale: 0.00392156862745098},
  worker: {eval: false},
  job: {name: $p, shards: 1, workers: 1, sync: {policy: "bsp", round_timeout: 6},
        session_timeout: 2},
  kafka: {"fetch.wait.max.ms": 500}}' >"$tmp/j.json"
t0=$(date +%s.%N)
"$SCADLES" worker -c "$tmp/j.json" --bootstrap "$bs" --id 0 --idle-exit 2 \
	>"$tmp/w.out" 2>"$tmp/w.err" &
w=$!
pids="$pids $w"
wait_trained "$tmp/w.err" 1 "$w"
sleep 1 # the update is sent and the policy waits
# ticks FILE: user + system clock ticks of a /proc stat file
ticks() { awk '{print $14 + $15}' "$1"; }
p1=$(ticks "/proc/$w/stat") m1=$(ticks "/proc/$w/task/$w/stat")
sleep 4
p2=$(ticks "/proc/$w/stat") && m2=$(ticks "/proc/$w/task/$w/stat") ||
	fail "the worker exited before the end of the measured wait"
echo "CPU over 4 s of waiting for a model: process $((p2 - p1)), main thread $((m2 - m1))" \
	"clock ticks (of $((4 * $(getconf CLK_TCK))))"
used=$((m2 - m1))
[ -n "${NA_REAL:-}" ] && used=$((p2 - p1))
[ "$used" -le 4 ] || fail "the waiting worker used $used ticks in 4 s"
timeout 60 tail --pid="$w" -f /dev/null || fail "the worker did not stop"
wait "$w" || fail "the worker exited $?"
t1=$(date +%s.%N)
check_worker "$tmp/w.out"
[ "$(summary "$tmp/w.out" .reason)" = "idle: no model" ] ||
	fail "stopped for $(summary "$tmp/w.out" .reason)"
[ "$(summary "$tmp/w.out" .consumed)" -eq 1000 ] || fail "consumed $(summary "$tmp/w.out" .consumed) of 1000"
[ "$(summary "$tmp/w.out" .trained)" -lt 1000 ] || fail "trained all 1000 with no model to wait for"
echo "ok: stopped ($(summary "$tmp/w.out" .reason)) after $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s," \
	"trained $(summary "$tmp/w.out" .trained), returned $(summary "$tmp/w.out" .returned)"
