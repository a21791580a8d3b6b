#!/usr/bin/env bash
# The interceptor plugin and its host (kcat, unmodified, on the embedded
# broker): the embedded worker's own Kafka clients connect as the host does
# (they inherit its security.*, ssl.* and sasl.* settings), and a plugin whose
# worker cannot start fails the host's consumer with a clear message instead
# of letting it consume with training off; kafka properties of the job that
# librdkafka would refuse fail the host's configuration call.
set -eu
BUILD=${BUILD:-build}
SCADLES=${SCADLES:-$BUILD/scadles}
top=$PWD
. "$(dirname "$0")/worker_common.inc"
use_plugin
start_broker ph:2 phj.grad:2 phj.model:2 phj.bcast:2 phj.inject:1 phj.ctl:1
"$SCADLES" feed --bootstrap "$bs" --topic ph --count 300 --rate 20000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" ||
	fail "feed failed"
jq '.job = {name: "phj", shards: 2, workers: 1, sync: {policy: "asp"}, session_timeout: 6,
            heartbeat_interval: 0.5, progress_interval: 1}' "$top/examples/kcat/job.json" >"$tmp/job.json"

# 1) Inheritance: librdkafka warns about a sasl.username without a SASL
#    mechanism in every client that has it; the worker's own clients (named
#    scadles-*) have it only if they inherited it from the host. It is set
#    before the plugin is loaded: the host's final configuration counts.
kcat -C -b "$bs" -t ph -o beginning -c 300 -q -f '' -X sasl.username=inherited-user \
	-X plugin.library.paths=libscadles \
	-X "scadles.config=$tmp/job.json" -X scadles.distributed=true -X scadles.worker.id=0 \
	-X scadles.eval=false -X scadles.flush.timeout.ms=5000 \
	2>"$tmp/inherit.err" || fail "kcat with the plugin exited $?"
n=$(grep 'CONFWARN|scadles-' "$tmp/inherit.err" | grep -c 'sasl.username' || true)
[ "$n" -ge 2 ] || fail "the worker's clients did not inherit sasl.username ($n warnings): $(cat "$tmp/inherit.err")"
echo "inheritance: $n of the worker's own clients carry the host's sasl.username"

# 2) A worker that cannot start fails the consumer. A high-level consumer
#    (kcat -G) gets the fatal error from its poll and exits non-zero; the
#    reason names the plugin's setting.
bad=(-X plugin.library.paths=libscadles -X "scadles.config=$top/examples/kcat/job.json"
	-X scadles.stats.file=/nonexistent-dir/stats.jsonl)
set +e
timeout 60 kcat -C -G phg -b "$bs" -o beginning -e -q -f '%o\n' "${bad[@]}" ph >"$tmp/g.out" 2>"$tmp/g.err"
rc=$?
set -e
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "kcat -G with a failing plugin exited $rc"
[ ! -s "$tmp/g.out" ] || fail "kcat -G consumed $(wc -l <"$tmp/g.out") records with training off"
grep -q 'Fatal error: .*scadles: scadles.stats.file /nonexistent-dir/stats.jsonl: cannot open' "$tmp/g.err" ||
	fail "no clear reason: $(cat "$tmp/g.err")"
echo "kcat -G: exit $rc, nothing consumed: $(grep -m1 'scadles: scadles.stats.file' "$tmp/g.err")"
# A legacy consumer (kcat -C -t) gets it from its error callback: kcat stops
# without consuming ("FATAL CLIENT ERROR ... terminating"; kcat's own exit
# status for a fatal error there is 0).
set +e
timeout 60 kcat -C -b "$bs" -t ph -o beginning -e -q -f '%o\n' "${bad[@]}" >"$tmp/c.out" 2>"$tmp/c.err"
rc=$?
set -e
[ "$rc" -ne 124 ] || fail "kcat -C did not stop"
[ ! -s "$tmp/c.out" ] || fail "kcat -C consumed $(wc -l <"$tmp/c.out") records with training off"
grep -q 'FATAL CLIENT ERROR: .*scadles: scadles.stats.file /nonexistent-dir/stats.jsonl' "$tmp/c.err" ||
	fail "kcat -C: no fatal error: $(cat "$tmp/c.err")"
echo "kcat -C: stopped (exit $rc), nothing consumed"
# 3) A job file whose kafka section librdkafka would refuse fails the host's
#    configuration call at once, naming the property.
jq '.kafka["linger.mss"] = 5' "$top/examples/kcat/job.json" >"$tmp/badkafka.json"
if kcat -C -b "$bs" -t ph -o beginning -e -q -X plugin.library.paths=libscadles \
	-X "scadles.config=$tmp/badkafka.json" >/dev/null 2>"$tmp/badkafka.err"; then
	fail "kcat accepted a job with kafka.linger.mss"
fi
grep -qF '$.kafka.linger.mss: No such configuration property' "$tmp/badkafka.err" ||
	fail "no path in: $(cat "$tmp/badkafka.err")"
echo "bad kafka property in the job file: refused by kcat's config call"
echo "plugin_host: ok"
