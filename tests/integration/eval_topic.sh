#!/usr/bin/env bash
# The held-out set read from a topic (eval.topic), as `scadles eval` does:
# every partition from its start to its end as of now, decoded like the
# streams; the same accuracy as the same records in a file (eval.file); a
# malformed record is an error naming topic, partition and offset; a topic
# with no record is an error naming $.eval.topic.
set -eu
BUILD=${BUILD:-build}
SCADLES=${SCADLES:-$BUILD/scadles}
. "$(dirname "$0")/worker_common.inc"
start_broker ev:3 bad:1 empty:2
"$SCADLES" feed --bootstrap "$bs" --topic ev --data synth --synth-n 900 --count 900 --rate 20000 \
	--format csv --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
# A model and its checkpoint: trained offline on synthetic data of the same shape.
jq -n --arg bs "$bs" '{model: {input: [1, 28, 28], layers: [{type: "flatten"},
	{type: "dense", units: 10}]}, data: {source: "synthetic", synthetic: {train: 2000}},
	train: {epochs: 1, progress_interval: 0}, kafka: {"bootstrap.servers": $bs},
	streams: {format: "csv", scale: 0.0039}}' >"$tmp/c.json"
"$SCADLES" train -c "$tmp/c.json" --set "train.checkpoint=\"$tmp/m.ckpt\"" >"$tmp/train.out" 2>&1 ||
	fail "train failed: $(tail -n 3 "$tmp/train.out")"
# 1) the topic, three times (partitions in any order): 900 records each time.
for i in 1 2 3; do
	"$SCADLES" eval -c "$tmp/c.json" --checkpoint "$tmp/m.ckpt" --set 'eval.topic="ev"' \
		>"$tmp/e$i.out" 2>"$tmp/e$i.err" || fail "eval of the topic exited $?: $(cat "$tmp/e$i.err")"
	grep -q '^test accuracy: [0-9.]* ([0-9]*/900)$' "$tmp/e$i.out" || fail "run $i: $(cat "$tmp/e$i.out")"
done
# 2) the same records as a file give the same hits.
kcat -C -b "$bs" -t ev -e -q -f '%s\n' >"$tmp/ev.csv" 2>/dev/null || fail "kcat could not read ev"
[ "$(wc -l <"$tmp/ev.csv")" -eq 900 ] || fail "kcat read $(wc -l <"$tmp/ev.csv") records"
"$SCADLES" eval -c "$tmp/c.json" --checkpoint "$tmp/m.ckpt" --set "eval.file=\"$tmp/ev.csv\"" \
	>"$tmp/f.out" 2>"$tmp/f.err" || fail "eval of the file exited $?: $(cat "$tmp/f.err")"
[ "$(cut -d' ' -f3- "$tmp/f.out")" = "$(cut -d' ' -f3- "$tmp/e1.out")" ] ||
	fail "file $(cat "$tmp/f.out") vs topic $(cat "$tmp/e1.out")"
# 3) a malformed record: the error names where it is.
printf '3,1,2\n' | kcat -P -b "$bs" -t bad -p 0 2>/dev/null || fail "kcat could not produce"
if "$SCADLES" eval -c "$tmp/c.json" --checkpoint "$tmp/m.ckpt" --set 'eval.topic="bad"' \
	>"$tmp/b.out" 2>"$tmp/b.err"; then
	fail "a malformed held-out record was accepted"
fi
grep -q 'bad \[0\] offset 0: csv record' "$tmp/b.err" || fail "no place in: $(cat "$tmp/b.err")"
# 4) a topic with no record.
if "$SCADLES" eval -c "$tmp/c.json" --checkpoint "$tmp/m.ckpt" --set 'eval.topic="empty"' \
	>"$tmp/n.out" 2>"$tmp/n.err"; then
	fail "an empty held-out topic was accepted"
fi
grep -q '\$.eval.topic: empty holds no records' "$tmp/n.err" || fail "empty topic: $(cat "$tmp/n.err")"
echo "eval_topic: 900 of 900 records three times ($(cut -d' ' -f3 "$tmp/e1.out"), as the file), malformed and empty topics refused with their place"
