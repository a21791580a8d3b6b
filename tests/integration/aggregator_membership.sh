#!/usr/bin/env bash
# Aggregator membership (bsp barriers from J.ctl): three fake workers join; a
# worker that sends "leave" stops holding rounds back at once (updates of the
# next rounds sent early wait, parked, instead of being lost); one that
# rejoins and then goes silent holds a round back only until the session
# timeout (6 s: the steps between its join and the check that it still
# holds the round take about 2.5 s on an idle machine) passes, after which
# the other two close rounds alone.
. "$(dirname "$0")/aggregator_common.inc"
start_broker
cfg="$tmp/job.json"
write_job "$cfg" member '{"job": {"sync": {"policy": "bsp"}, "session_timeout": 6,
  "progress_interval": 0.1}}'
ctl() {
	"$AGG_SELFTEST" ctl "$1" -c "$cfg" -b "$bs" --worker "$2" >>"$tmp/produce.out" 2>>"$tmp/produce.err" ||
		fail "could not send $1 for worker $2"
}
# rounds FROM TO [ARGS]: one round at a time, each after the previous closed,
# as bsp workers do (an update for a round not reached yet is rejected)
rounds() {
	local from=$1 to=$2
	shift 2
	for r in $(seq "$from" "$to"); do
		produce "$cfg" --seq-from "$r" --seq-to "$r" "$@"
		wait_version "$r" 10 || fail "round $r did not close"
	done
}
# wait_version V SECONDS: every shard at version V in a progress line
wait_version() {
	for _ in $(seq 1 $(($2 * 10))); do
		grep -Eq "shards=\[0:v$1@[0-9]+,1:v$1@[0-9]+,2:v$1@[0-9]+,3:v$1@[0-9]+\]" "$tmp/a.err" && return 0
		sleep 0.1
	done
	return 1
}

agg a -c "$cfg"
apid=$lastpid
wait_held a 30 || fail "the aggregator took no shard"
for w in 0 1 2; do ctl join $w; done
# J.ctl and J.grad are separate topics: see the joins before round 1
# (a round closes with the workers live at that moment; joins that land in
# the start-up grace, while every worker counts as live, change no state, so
# the aggregator's "joined" lines are what tells they were read)
for _ in $(seq 1 50); do
	[ "$(grep -c "worker [0-9] joined" "$tmp/a.err")" -ge 3 ] && break
	sleep 0.1
done
[ "$(grep -c "worker [0-9] joined" "$tmp/a.err")" -ge 3 ] || fail "the three joins were not read"
rounds 1 5

# rounds 6-10 in one burst before worker 2's leave: round 7's updates come
# before round 6 closed, so each shard parks its partition (no update is
# lost) until the leave closes round 6, then reads on
produce "$cfg" --seq-from 6 --seq-to 10 --skip-worker 2
sleep 1
grep "progress:" "$tmp/a.err" | tail -1 | grep -Eq "shards=\[0:v5@" ||
	fail "round 6 did not wait for worker 2"
ctl leave 2
wait_version 10 10 || fail "rounds 6-10 did not close after the leave"

ctl join 2
for _ in $(seq 1 50); do
	[ "$(grep -c "worker 2 joined" "$tmp/a.err")" -ge 2 ] && break
	sleep 0.1
done
[ "$(grep -c "worker 2 joined" "$tmp/a.err")" -ge 2 ] || fail "worker 2's join was not seen"
t0=$(date +%s.%N)
produce "$cfg" --seq-from 11 --seq-to 11 --skip-worker 2
sleep 1.5
ctl heartbeat 0
ctl heartbeat 1
grep -Eq "shards=\[0:v11@" "$tmp/a.err" && fail "round 11 closed while worker 2 was live"
wait_version 11 15 || fail "round 11 did not close after worker 2 went silent"
waited=$(echo "$(date +%s.%N) - $t0" | bc)
grep -q "worker 2 left the barriers" "$tmp/a.err" || fail "worker 2's silence was not noticed"
rounds 12 15 --skip-worker 2

kill -TERM "$apid"
wait "$apid" || fail "the aggregator exited with an error"
[ "$(summary a .applied)" = 140 ] || fail "applied $(summary a .applied), expected 140"
[ "$(summary a .stale)" = 0 ] || fail "stale updates: $(summary a .stale)"
[ "$(summary a .rejected_total)" = 0 ] || fail "rejected: $(summary a .rejected)"
[ "$(summary a .parked)" -ge 4 ] || fail "parked $(summary a .parked) times, expected >= 4 (one per shard)"
echo "parked $(summary a .parked) times, nothing lost; leave closed rounds at once; a silent worker held round 11 for ${waited}s (timeout 6 s)"
echo "PASS"
