#!/usr/bin/env bash
# `scadles predict` on the embedded broker: 10,000 Fashion-MNIST test
# records and 3 malformed ones in, 10,000 acknowledged predictions whose hits
# equal `scadles eval` of the same checkpoint, 3 dead letters, every offset
# committed (predict_common.inc); plus its usage and model errors.
. "$(dirname "$0")/predict_common.inc"

start_broker pin:2
predict_end_to_end "$bs" pin pout pdlq pgroup

# Errors: usage (exit 2), a missing checkpoint (1), another model's (2).
"$SCADLES" predict -c "$tmp/p.json" --bootstrap "$bs" --in pin --checkpoint "$tmp/m.ckpt" \
	>/dev/null 2>"$tmp/e1.err" && fail "no --out accepted"
grep -q -- '--out TOPIC is required' "$tmp/e1.err" || fail "usage error: $(cat "$tmp/e1.err")"
set +e
"$SCADLES" predict -c "$tmp/p.json" --bootstrap "$bs" --in pin --out pout --checkpoint "$tmp/nope" \
	>/dev/null 2>"$tmp/e2.err"
rc=$?
"$SCADLES" predict -c "$tmp/p.json" --bootstrap "$bs" --in pin --out pout --checkpoint "$tmp/m.ckpt" \
	--set model.layers[1].units=16 >/dev/null 2>"$tmp/e3.err"
rc3=$?
set -e
[ "$rc" -eq 1 ] && grep -q "$tmp/nope: cannot open" "$tmp/e2.err" || fail "missing checkpoint: rc $rc, $(cat "$tmp/e2.err")"
[ "$rc3" -eq 2 ] && grep -q "m.ckpt" "$tmp/e3.err" || fail "other model's checkpoint: rc $rc3, $(cat "$tmp/e3.err")"
echo "ok: predictions equal eval's, dead letters and commits exact"
