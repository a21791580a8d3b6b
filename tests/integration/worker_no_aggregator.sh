#!/usr/bin/env bash
# A bsp worker whose job has no aggregator (default intervals, not the
# short ones of the other tests; kafka.fetch.wait.max.ms 500, librdkafka's
# default, where the job's own consumers default to 10 for round latency
# and then fetch 100 times a second each): it trains its first batch, sends
# the update, and its policy then waits for a model that never comes. While
# it waits it sleeps: over 4 s of the wait (CPU time from /proc's
# schedstat, per thread) its main thread (scadles' loop) uses under 1% of a
# core, and on Kafka (SCADLES_KAFKA=host:port,
# worker_no_aggregator_real_kafka.sh) the whole process under 3% (about 1%
# here, half of it librdkafka's timers) with its threads woken at most 150
# times a second (see the bounds below). On the embedded broker the process
# is not bounded: librdkafka's mock broker answers each fetch at once where
# Kafka holds it for fetch.wait.max.ms (printed). It stops as idle once it
# waited --idle-exit (2 s) + job.session_timeout (2 s) +
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
# cpu_ns PID: "tid ns wakeups name" for each thread of PID: ns its time on
# a CPU by the scheduler's own accounting (/proc/PID/task/TID/schedstat) --
# exact, where /proc's clock ticks are sampled (a thread that wakes briefly
# is charged a whole tick whenever the tick falls in its slice) -- and
# wakeups its voluntary context switches (each a sleep ended), which a
# loaded machine does not multiply
cpu_ns() {
	local f ns vcs name
	for f in /proc/"$1"/task/*; do
		read -r ns _ <"$f/schedstat" && read -r name <"$f/comm" &&
			vcs=$(awk '/^voluntary_ctxt_switches/ {print $2}' "$f/status") &&
			echo "${f##*/} $ns $vcs $name"
	done 2>/dev/null
}
cpu_ns "$w" >"$tmp/cpu1"
sleep 4
cpu_ns "$w" >"$tmp/cpu2"
kill -0 "$w" 2>/dev/null || fail "the worker exited before the end of the measured wait"
for f in cpu1 cpu2; do # no reading, no figure: never a pass by default
	awk -v pid="$w" '$1 == pid && $2 > 0 { ok = 1 } END { exit !ok }' "$tmp/$f" ||
		fail "no CPU time read for the worker's main thread from /proc/$w/task/$w/schedstat"
done
# milliseconds used in between by the threads known at the end: the main
# thread (scadles' loop), librdkafka's client threads (rdk:main) and broker
# threads (rdk:broker*), and the whole process
read -r main_ms rdk_main_ms rdk_broker_ms proc_ms wakeups < <(awk -v pid="$w" '
	NR == FNR { a[$1] = $2; v[$1] = $3; next }
	{ d = ($2 - ($1 in a ? a[$1] : 0)) / 1e6; all += d; wk += $3 - ($1 in v ? v[$1] : 0)
	  if ($1 == pid) m += d; else if ($4 == "rdk:main") rm += d; else if ($4 ~ /^rdk:broker/) rb += d }
	END { printf "%d %d %d %d %d\n", m, rm, rb, all, wk }' "$tmp/cpu1" "$tmp/cpu2")
echo "CPU over 4 s of waiting for a model (ms of 4000): process $proc_ms, main thread $main_ms," \
	"librdkafka's rdk:main threads $rdk_main_ms, broker threads $rdk_broker_ms" \
	"($(wc -l <"$tmp/cpu2") threads, $wakeups wakeups)"
# Bounds that a loop or fetch that polls breaks and a loaded machine keeps:
# scadles' loop under 1% of a core (40 ms of CPU time); on Kafka, the
# process's threads woke at most 600 times (here about 150-200;
# kafka.fetch.wait.max.ms 10 makes each broker thread wake some 90 times a
# second, 1,182 in all in one run) and used under 3% of a core (measured 35-58
# ms, about 1%, half of it Debian's librdkafka 2.0.2 spinning up to 1 ms
# before each of its clients' timers: librdkafka issue 4684, fixed in
# 2.3.1). The CPU time a wakeup costs grows on a loaded machine; the number
# of wakeups does not.
[ "$main_ms" -le 40 ] || fail "the waiting worker's loop used $main_ms ms of CPU in 4 s"
if [ -n "${NA_REAL:-}" ]; then
	[ "$wakeups" -le 600 ] || fail "the waiting worker's threads woke $wakeups times in 4 s"
	[ "$proc_ms" -le 120 ] || fail "the waiting worker used $proc_ms ms of CPU in 4 s"
fi
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
