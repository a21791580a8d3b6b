#!/usr/bin/env bash
# End to end: `scadles demo` with 2 workers on 4 Fashion-MNIST topics must
# reach 82% test accuracy (78% for the model after shutdown), with every update sent acknowledged and applied (none stale),
# exact record accounting and no record lost.
. "$(dirname "$0")/worker_common.inc"
[ -e /usr/share/datasets/fashion-mnist ] || { echo "Fashion-MNIST not installed"; exit 77; }

"$SCADLES" demo --workers 2 --topics 4 --rate 250 --duration 70 --target 0.82 --no-plot \
	--out "$tmp/demo" >"$tmp/demo.out" 2>"$tmp/demo.err" || fail "demo exited $?"
cat "$tmp/demo.out"
acc=$(awk '/^  test accuracy/ {print $3}' "$tmp/demo.out")
if ! awk -v a="$acc" 'BEGIN {exit !(a >= 0.78)}'; then
	# What the stop did: the accuracy points, each process's last lines.
	cat "$tmp/demo/accuracy.tsv"
	for f in "$tmp"/demo/worker*.err "$tmp"/demo/aggregator*.err; do
		echo "--- $f"
		tail -n 12 "$f"
	done
	fail "test accuracy $acc < 0.78"
fi
# The final model is the one the aggregators released: every shard at one version.
grep -Eq '^  final model       v[0-9]+ \(4 shards\)$' "$tmp/demo.out" ||
	fail "final model: $(grep '^  final model' "$tmp/demo.out")"
read -r sent acked applied stale < <(awk '/^  updates/ {print $2, $4, $6, $8}' "$tmp/demo.out")
[ "$sent" -gt 0 ] && [ "$sent" -eq "$acked" ] && [ "$acked" -eq "$applied" ] && [ "$stale" -eq 0 ] ||
	fail "updates: sent $sent, acknowledged $acked, applied $applied, stale $stale"
grep -q 'accounting exact (2/2' "$tmp/demo.out" || fail "record accounting"
grep -q '^  records lost      0$' "$tmp/demo.out" || fail "records lost"
# Prequential: the workers' batches scored before they trained, summed.
read -r pacc pn < <(awk '/^  prequential/ {print $2, $5}' "$tmp/demo.out")
awk -v a="${pacc:-0}" -v n="${pn:-0}" 'BEGIN {exit !(a > 0.5 && n > 0)}' ||
	fail "prequential line: $(grep '^  prequential' "$tmp/demo.out")"
echo "ok: accuracy $acc"
