#!/usr/bin/env bash
# End to end: `scadles demo` with 2 workers on 4 Fashion-MNIST topics must
# reach 82% test accuracy (75% for the model after shutdown), with every update sent acknowledged and applied (none stale),
# exact record accounting and no record lost. The model after shutdown is a
# few versions past the evaluation that reached the target, on a curve whose
# 2-s evaluations move by up to 0.03 at this learning rate: measured 0.7934,
# 0.8174, 0.7987 (best 0.8218, 0.8235, 0.8260) on one machine, 0.7673 (best
# 0.8225) on another; the bound catches a broken stop, not that noise.
. "$(dirname "$0")/worker_common.inc"
[ -e /usr/share/datasets/fashion-mnist ] || { echo "Fashion-MNIST not installed"; exit 77; }

"$SCADLES" demo --workers 2 --topics 4 --rate 250 --duration 70 --target 0.82 --no-plot \
	--out "$tmp/demo" >"$tmp/demo.out" 2>"$tmp/demo.err" || fail "demo exited $?"
cat "$tmp/demo.out"
acc=$(awk '/^  test accuracy/ {print $3}' "$tmp/demo.out")
if ! awk -v a="$acc" 'BEGIN {exit !(a >= 0.75)}'; then
	# What the stop did: the accuracy points, each process's last lines.
	cat "$tmp/demo/accuracy.tsv"
	for f in "$tmp"/demo/worker*.err "$tmp"/demo/aggregator*.err; do
		echo "--- $f"
		tail -n 12 "$f"
	done
	fail "test accuracy $acc < 0.75"
fi
# The target was reached (an evaluation at or above 0.82) within the duration.
best=$(sed -n 's/^  test accuracy .*(best \([0-9.]*\)).*/\1/p' "$tmp/demo.out")
grep -q '^demo summary (target reached):' "$tmp/demo.out" &&
	awk -v a="${best:-0}" 'BEGIN {exit !(a >= 0.82)}' || fail "target 0.82 not reached: best ${best:-none}"
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
