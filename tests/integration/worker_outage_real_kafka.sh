#!/usr/bin/env bash
# A broker outage is not idle topics: a standalone worker on a real Apache
# Kafka (SCADLES_KAFKA; the broker started by scripts/kafka.sh, found with
# the KAFKA_PORT and KAFKA_DIR scripts/run-integration.sh exports) reads a
# feed to its end and waits with --idle-exit 6; the broker is killed
# (SIGKILL, data kept) for longer than three times that and started again
# (scripts/kafka.sh kill 1 / start 1). The worker must not exit
# while the broker is away (it logs that idle time does not count), must
# exit idle after the broker is back, with its accounting exact and every
# partition committed to its end. Its Prometheus endpoint says so:
# scadles_broker_reachable 0 and /healthz 503 "no broker reachable" once
# metrics.broker_down (5 s) has passed, 200 again when the broker is back. Skipped (77) without SCADLES_KAFKA or when
# this broker is not one scripts/kafka.sh can stop.
. "$(dirname "$0")/worker_common.inc"
need_real_kafka
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/scripts/kafka.sh" status 2>/dev/null | grep -q "running $bs " || {
	echo "the broker at $bs is not one scripts/kafka.sh runs (cannot stop it)"
	exit 77
}
# A failure while the broker is stopped must not leave it stopped for the
# tests after this one.
broker_down=0
trap '[ "$broker_down" = 0 ] || "$root/scripts/kafka.sh" start 1 >/dev/null 2>&1; cleanup' EXIT
run="wo$$x$(date +%s)"
"$SCADLES" feed --bootstrap "$bs" --prefix "$run" --topics 2 --count 1500 --rate 6000 --data synth \
	--synth-n 2000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
write_config "$tmp/w.json" "[{\"topic\": \"$run.0\"}, {\"topic\": \"$run.1\"}]" \
	"{\"source\": {\"group_id\": \"$run\"},
	  \"metrics\": {\"listen\": \"127.0.0.1:0\", \"broker_down\": 5},
	  \"kafka\": {\"reconnect.backoff.max.ms\": 1000, \"session.timeout.ms\": 45000}}"
"$SCADLES" worker -c "$tmp/w.json" --bootstrap "$bs" --idle-exit 6 >"$tmp/w.out" 2>"$tmp/w.err" &
w=$!
pids="$pids $w"
wait_trained "$tmp/w.err" 3000 "$w"
broker_down=1
"$root/scripts/kafka.sh" kill 1 >"$tmp/kafka-down.log" 2>&1 || fail "kafka kill"
down_at=$(date +%s)
lines_at_kill=$(grep -c '^worker: ' "$tmp/w.err" || true)
# Longer than three times the idle time (a worker revoked of its partitions
# waits three times as long) with no broker: the worker must still run.
sleep 20
! grep -q 'stopped (' "$tmp/w.err" || fail "the worker stopped while the broker was down: $(grep 'stopped (' "$tmp/w.err")"
# ... and kept running: its progress lines (every 0.5 s) went on, no stop
# blocked on a commit to the missing broker.
lines=$(($(grep -c '^worker: ' "$tmp/w.err") - lines_at_kill))
[ "$lines" -ge 10 ] || fail "the worker printed $lines progress lines in the 20 s without a broker (stuck stopping?)"
grep -q 'no broker reachable: idle time does not count' "$tmp/w.err" ||
	fail "the worker did not say that the broker is unreachable"
maddr=$(grep -o 'metrics on http://[0-9.]*:[0-9]*' "$tmp/w.err" | head -n 1 | sed 's|.*http://||')
[ -n "$maddr" ] || fail "the worker logged no metrics address"
health=$(curl -s -m 5 "http://$maddr/healthz")
case "$health" in "no broker reachable for "*) ;; *) fail "/healthz with the broker down: $health" ;; esac
curl -s -m 5 "http://$maddr/metrics" | grep -q '^scadles_broker_reachable 0$' ||
	fail "scadles_broker_reachable is not 0 with the broker down"
"$root/scripts/kafka.sh" start 1 >"$tmp/kafka-up.log" 2>&1 || fail "kafka start"
broker_down=0
up_at=$(date +%s)
# Idle time counts only while a broker is reachable: /healthz turns 200 before
# the idle exit.
healthy=""
while kill -0 "$w" 2>/dev/null; do
	[ "$(curl -s -m 2 "http://$maddr/healthz")" = ok ] && { healthy=$(($(date +%s) - up_at)); break; }
	sleep 0.2
done
[ -n "$healthy" ] || fail "/healthz never said ok again after the broker came back"
wait "$w" || fail "the worker exited $?"
end_at=$(date +%s)
grep -q 'stopped (idle)' "$tmp/w.err" || fail "the worker stopped for another reason: $(grep stopped "$tmp/w.err")"
[ "$(summary "$tmp/w.out" .identity_ok)" = true ] || fail "accounting identity broken"
[ "$(summary "$tmp/w.out" .trained)" -eq 3000 ] || fail "trained $(summary "$tmp/w.out" .trained) of 3000"
[ "$(summary "$tmp/w.out" .lost)" -eq 0 ] || fail "lost $(summary "$tmp/w.out" .lost)"
check_committed "$tmp/w.out"
echo "broker down $((up_at - down_at)) s; the worker waited (/healthz: $health), then exited idle" \
	"$((end_at - up_at)) s after the broker was back (/healthz ok after ${healthy} s); trained 3000" \
	"of 3000, every partition committed to its end"
echo "worker_outage_real_kafka: ok"
