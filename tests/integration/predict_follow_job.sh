#!/usr/bin/env bash
# `scadles predict --follow-job` next to a running distributed job (2
# workers, 1 aggregator, 2 shards, embedded broker): the predictions'
# model_version advances while the job trains (the processor swaps in each
# new J.model between batches), never goes back within an output partition,
# and every input record is predicted, acknowledged and committed.
. "$(dirname "$0")/distributed_common.inc"

start_broker wk.0:2 wk.1:2 dj.grad:2 dj.model:2 dj.inject:1 dj.ctl:1 live:2
"$SCADLES" feed --bootstrap "$bs" --prefix wk --topics 2 --count 3000 --rate 6000 --data synth \
	--synth-n 2000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
write_job "$tmp/j.json" '[{"topic": "wk.0"}, {"topic": "wk.1"}]'

"$SCADLES" aggregator -c "$tmp/j.json" --bootstrap "$bs" --idle-exit 12 >"$tmp/a.out" 2>"$tmp/a.err" &
a=$!
pids="$pids $a"
sleep 1
for w in 0 1; do
	"$SCADLES" worker -c "$tmp/j.json" --bootstrap "$bs" --id $w --throttle 200 --idle-exit 4 \
		>"$tmp/w$w.out" 2>"$tmp/w$w.err" &
	pids="$pids $!"
	[ $w -eq 0 ] && w0=$!
done
wait_trained "$tmp/w0.err" 200 "$w0"
# The records to predict arrive while the job trains.
"$SCADLES" feed --bootstrap "$bs" --topic live --rate 400 --duration 8 --data synth --synth-n 2000 \
	--quiet >"$tmp/live.out" 2>"$tmp/live.err" &
f=$!
pids="$pids $f"
"$SCADLES" predict -c "$tmp/j.json" --bootstrap "$bs" --in live --out preds --follow-job \
	--group pg --idle-exit 3 --duration 90 --progress 1 >"$tmp/pred.out" 2>"$tmp/pred.err" &
p=$!
pids="$pids $p"
wait "$f" || fail "live feed exited $?"
wait "$p" || fail "predict exited $?"
tail -n 4 "$tmp/pred.err"
summary "$tmp/pred.out" 'del(.partitions)' | jq -c .
n=$(summary "$tmp/pred.out" .consumed)
[ "$n" -gt 0 ] && [ "$n" -eq "$(summary "$tmp/pred.out" .acknowledged)" ] || fail "not every record predicted"
[ "$(summary "$tmp/pred.out" .bad)" -eq 0 ] || fail "bad records"
[ "$(summary "$tmp/pred.out" .identity_ok)" = true ] || fail "accounting"
check_committed "$tmp/pred.out"
[ "$(summary "$tmp/pred.out" .model_swaps)" -ge 2 ] || fail "fewer than 2 model swaps"
kcat -C -b "$bs" -t preds -e -q -f '%p %o %s\n' >"$tmp/preds.txt"
[ "$(wc -l <"$tmp/preds.txt")" -eq "$n" ] || fail "$(wc -l <"$tmp/preds.txt") predictions, $n records"
versions=$(cut -d' ' -f3- "$tmp/preds.txt" | jq -r .model_version | sort -n -u)
echo "model versions seen: $(echo "$versions" | wc -l) ($(echo "$versions" | head -n 1) .. $(echo "$versions" | tail -n 1))"
[ "$(echo "$versions" | wc -l)" -ge 3 ] || fail "model_version did not advance: $versions"
# Within an output partition (in production order) the version never drops.
sort -k1,1n -k2,2n "$tmp/preds.txt" | sed -E 's/^([0-9]+) [0-9]+ .*"model_version":([0-9]+).*$/\1 \2/' | awk '{ if ($1 in last && $2 < last[$1]) { bad = 1 } last[$1] = $2 } END { exit bad }' ||
	fail "model_version went back within an output partition"
echo "ok: model_version advanced during the job, every record predicted and committed"
