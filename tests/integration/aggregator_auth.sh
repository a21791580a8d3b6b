#!/usr/bin/env bash
# Aggregator in an authenticated job (job.auth.key_env): the self-test
# workers sign their updates and heartbeats with their own keys, the
# aggregator publishes signed shards, and the checker (verifying them with
# the aggregators' key) finds them equal to the expected ones. A second run
# restores every shard from the signed J.model records. An aggregator with
# another key rejects every record (auth) and restores none (the records do
# not verify: model), one with job.auth.mode none refuses the signed records
# and warns, and one with no key anywhere does not start (exit 2) and says
# how to make a key.
. "$(dirname "$0")/aggregator_common.inc"
start_broker

cfg="$tmp/auth.json"
write_job "$cfg" eoauth '{"job": {"auth": {"key_env": "SC_ITEST_JOB_KEY"}}}'
export SC_ITEST_JOB_KEY="itest-job-key-$RANDOM-$RANDOM-0123456789"
produce "$cfg" --seq-to 20 --dup-every 13
"$AGG_SELFTEST" ctl heartbeat -c "$cfg" -b "$bs" --worker 1 >>"$tmp/produce.out" \
	2>>"$tmp/produce.err" || fail "selftest heartbeat failed"
"$SCADLES" aggregator -c "$cfg" -b "$bs" --idle-exit 1.5 >"$tmp/a1.out" 2>"$tmp/a1.err" ||
	fail "aggregator run 1 failed"
[ "$(summary a1 .authenticated)" = true ] || fail "run 1 not authenticated"
[ "$(summary a1 .applied)" = 240 ] || fail "run 1 applied $(summary a1 .applied), expected 240"
[ "$(summary a1 .rejected_total)" = 0 ] || fail "run 1 rejected $(summary a1 '.rejected | tostring')"
check "$cfg" 20 || fail "J.model differs from the expected shards after run 1"

produce "$cfg" --seq-from 21 --seq-to 40
"$SCADLES" aggregator -c "$cfg" -b "$bs" --idle-exit 1.5 >"$tmp/a2.out" 2>"$tmp/a2.err" ||
	fail "aggregator run 2 failed"
[ "$(summary a2 .restored)" = 4 ] || fail "run 2 restored $(summary a2 .restored) shards"
[ "$(summary a2 .applied)" = 240 ] || fail "run 2 applied $(summary a2 .applied), expected 240"
check "$cfg" 40 || fail "J.model differs from the expected shards after run 2"

# another key: nothing verifies (a fresh consumer group reads J.grad from its start)
SC_ITEST_JOB_KEY="another-key-of-the-same-length-000000" \
	"$SCADLES" aggregator -c "$cfg" -b "$bs" --idle-exit 1.5 \
	>"$tmp/a3.out" 2>"$tmp/a3.err" || fail "aggregator run 3 failed"
[ "$(summary a3 .applied)" = 0 ] || fail "run 3 applied $(summary a3 .applied) with the wrong key"
[ "$(summary a3 .restored)" = 0 ] || fail "run 3 restored shards signed with another key"
[ "$(summary a3 .rejected.model)" -gt 0 ] || fail "run 3 did not reject the model records"
# unauthenticated (job.auth.mode none): the signed records are refused as
# needing the key, and the aggregator says it is not authenticated
"$SCADLES" aggregator -c "$cfg" -b "$bs" --idle-exit 1.5 --set 'job.auth.key_env=""' \
	--set job.auth.mode=none >"$tmp/a4.out" 2>"$tmp/a4.err" || fail "aggregator run 4 failed"
[ "$(summary a4 .applied)" = 0 ] || fail "run 4 applied $(summary a4 .applied) without a key"
[ "$(summary a4 .authenticated)" = false ] || fail "run 4 says it is authenticated"
grep -q "not authenticated" "$tmp/a4.err" || fail "run 4 did not warn that it is unauthenticated"
# no key anywhere (and no mode none): the aggregator does not start, and
# says how to make a key
rc=0
env -u SCADLES_JOB_KEY "$SCADLES" aggregator -c "$cfg" -b "$bs" --idle-exit 1.5 \
	--set 'job.auth.key_env=""' >"$tmp/a5.out" 2>"$tmp/a5.err" || rc=$?
[ "$rc" -eq 2 ] || fail "run 5 (no key) exited $rc, not 2"
grep -q 'scadles keygen' "$tmp/a5.err" || fail "run 5 does not say how to make a key"
grep -qF "$SC_ITEST_JOB_KEY" "$tmp"/*.out "$tmp"/*.err && fail "a log printed the key"
echo "ok: signed updates applied exactly once, signed shards restored; other keys refused" \
	"(run 3: $(summary a3 '.rejected | tostring'))"
