#!/usr/bin/env bash
# Aggregator, bad input: corrupt and foreign records on J.grad (bit flips,
# truncation, JSON, a control message, an update for another shard, an
# unknown worker) and on J.model (garbage, another shard's record) are
# counted by kind, logged once per kind with topic/partition/offset, never
# applied and never fatal; the model still equals the expected one.
. "$(dirname "$0")/aggregator_common.inc"
start_broker
cfg="$tmp/job.json"
# unauthenticated (job.auth.mode none): the records reach the decoder, not the tag check
write_job "$cfg" bad '{"job": {"auth": {"mode": "none"}}}'

produce "$cfg" --seq-to 20 --corrupt-every 7
bad=$(jq -s 'map(.bad) | add' <(sed -n 's/^produced: //p' "$tmp/produce.out"))
"$SCADLES" aggregator -c "$cfg" -b "$bs" --idle-exit 1.5 >"$tmp/a1.out" 2>"$tmp/a1.err" || fail "run 1 failed"
[ "$(summary a1 .rejected_total)" = "$bad" ] || fail "rejected $(summary a1 .rejected_total) of $bad bad records"
[ "$(summary a1 .applied)" = 240 ] || fail "applied $(summary a1 .applied), expected 240"
for kind in corrupt foreign shard update; do
	[ "$(summary a1 .rejected.$kind)" -gt 0 ] || fail "no $kind rejection counted"
	[ "$(grep -c "rejected $kind record at bad.grad \[[0-9]\] offset [0-9]" "$tmp/a1.err")" = 1 ] ||
		fail "$kind rejections not logged exactly once with topic/partition/offset"
done
check "$cfg" 20 || fail "J.model differs from the expected shards"
echo "J.grad: $bad bad records rejected: $(summary a1 .rejected)"

# bad records after the good snapshots on J.model: skipped, the snapshot before them restored
"$AGG_SELFTEST" bad-model -c "$cfg" -b "$bs" >>"$tmp/produce.out" 2>>"$tmp/produce.err" ||
	fail "could not write bad J.model records"
produce "$cfg" --seq-from 21 --seq-to 30 --corrupt-every 5
"$SCADLES" aggregator -c "$cfg" -b "$bs" --idle-exit 1.5 >"$tmp/a2.out" 2>"$tmp/a2.err" || fail "run 2 failed"
[ "$(summary a2 .restored)" = 4 ] || fail "restored $(summary a2 .restored) shards, expected 4"
[ "$(summary a2 .rejected.model)" = 8 ] || fail "rejected $(summary a2 .rejected.model) J.model records, expected 8"
check "$cfg" 30 || fail "J.model differs from the expected shards after run 2"
echo "J.model: $(summary a2 .rejected.model) bad records skipped, 4 shards restored"
echo "PASS"
