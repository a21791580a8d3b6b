#!/usr/bin/env bash
# Aggregator, exactly once: fake workers send known updates (with duplicates)
# to J.grad; one aggregator applies them and publishes to J.model; the
# checker replays the same updates through core/server and the published
# shards must equal it bit for bit, with every worker's seqs applied. A
# second run restores the shards from J.model and continues (asp with server
# momentum, then bsp rounds with top-k + error feedback: sparse payloads).
. "$(dirname "$0")/aggregator_common.inc"
start_broker

for pol in asp bsp; do
	cfg="$tmp/$pol.json"
	if [ $pol = asp ]; then
		write_job "$cfg" "eo$pol"
	else
		write_job "$cfg" "eo$pol" '{"job": {"sync": {"policy": "bsp"},
		  "codec": {"name": "topk", "ratio": 0.1, "error_feedback": 1}}}'
	fi
	produce "$cfg" --seq-to 20 --dup-every 13
	"$SCADLES" aggregator -c "$cfg" -b "$bs" --idle-exit 1.5 >"$tmp/$pol-1.out" 2>"$tmp/$pol-1.err" ||
		fail "$pol: aggregator run 1 failed"
	[ "$(summary $pol-1 .applied)" = 240 ] || fail "$pol: run 1 applied $(summary $pol-1 .applied), expected 240"
	[ "$(summary $pol-1 .duplicates)" = 18 ] || fail "$pol: run 1 duplicates $(summary $pol-1 .duplicates), expected 18"
	[ "$(summary $pol-1 .initialized)" = 4 ] || fail "$pol: run 1 did not start from the seeded model"
	check "$cfg" 20 || fail "$pol: J.model differs from the expected shards after run 1"

	produce "$cfg" --seq-from 21 --seq-to 40 --dup-every 7
	"$SCADLES" aggregator -c "$cfg" -b "$bs" --idle-exit 1.5 >"$tmp/$pol-2.out" 2>"$tmp/$pol-2.err" ||
		fail "$pol: aggregator run 2 failed"
	[ "$(summary $pol-2 .restored)" = 4 ] || fail "$pol: run 2 restored $(summary $pol-2 .restored) shards"
	[ "$(summary $pol-2 .applied)" = 240 ] || fail "$pol: run 2 applied $(summary $pol-2 .applied), expected 240"
	check "$cfg" 40 || fail "$pol: J.model differs from the expected shards after run 2"
	steps=$(summary $pol-2 .steps)
	echo "$pol: 480 updates applied once over two runs; run 2 steps $steps; $(summary $pol-2 .updates_per_s) updates/s"
	if [ $pol = bsp ]; then
		# 20 rounds per shard in run 2: one version per round of 3 workers
		[ "$steps" = 80 ] || fail "bsp: run 2 closed $steps rounds, expected 80"
	fi
done
grep -h '"shard":0' "$tmp/check.out"
echo "PASS"
