#!/usr/bin/env bash
# tabular_e2e.sh — a user's own tabular data, end to end on the embedded
# broker: examples/tabular/gen.py's sensor data set published as CSV records
# to sensors.csv and JSON records to sensors.json, held-out set from a CSV
# file (eval.file, decoded by the sensors.csv decoder). A standalone worker
# and a 2-worker distributed job (bsp, 2 shards, 2 aggregators) each reach
# 0.85 test accuracy; prequential figures in the progress lines and the
# summaries agree with a recomputation from the confusion matrix; the
# worker's checkpoint evaluates to the worker's accuracy; `model pull` ->
# `eval` gives exactly the accuracy of the job's final model (the last
# aggregator's checkpoint line), and examples/tabular/score.py, reading the
# file by docs/MODEL.md's layout, scores it the same.
. "$(dirname "$0")/distributed_common.inc"
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }
MIN_ACC=0.85

data=$tmp/data
python3 examples/tabular/gen.py "$data" --train 20000 --eval 2000 --seed 1 || fail "gen.py"
start_broker sensors.csv:2 sensors.json:2 tabular.grad:2 tabular.model:2 tabular.inject:1 \
	tabular.ctl:1
# publish FILE TOPIC: odd lines to partition 0, even lines to partition 1.
publish() {
	for p in 0 1; do
		awk -v p=$p 'NR % 2 == 1 - p' "$1" | kcat -P -b "$bs" -t "$2" -p $p ||
			fail "kcat $2 [$p]"
	done
}
publish "$data/train.csv" sensors.csv
publish "$data/train.jsonl" sensors.json

# jq_conf SRC DST: the example configuration pointed at this test's files.
jq_conf() {
	jq --arg e "$data/eval.csv" --arg c "$tmp/$3" '.eval.file = $e | .train.checkpoint = $c' \
		"$1" >"$2"
}

# check_preq FILE: the prequential figures of a worker summary against a
# recomputation from its confusion matrix, and present in its progress lines.
check_preq() {
	local f=$1 n
	n=$(basename "$f" .out)
	[ "$(summary "$f" '.prequential.samples == .trained')" = true ] ||
		fail "$n: prequential samples $(summary "$f" .prequential.samples) != trained $(summary "$f" .trained)"
	[ "$(summary "$f" '([.prequential.confusion[][]] | add) == .prequential.samples')" = true ] ||
		fail "$n: the confusion matrix does not count every scored sample"
	[ "$(summary "$f" '.prequential as $p | ([range(0; $p.confusion | length) | $p.confusion[.][.]] | add) / $p.samples | . - $p.accuracy | fabs < 1e-12')" = true ] ||
		fail "$n: prequential accuracy $(summary "$f" .prequential.accuracy) is not the confusion matrix's"
	[ "$(summary "$f" '.prequential as $p | [range(0; $p.confusion | length) | ($p.confusion[.] | add) as $t | if $t == 0 then null else $p.confusion[.][.] / $t end] == $p.per_class_accuracy')" = true ] ||
		fail "$n: per-class accuracy is not the confusion matrix's"
	[ "$(summary "$f" '.prequential.window_samples == ([.prequential.window, .prequential.samples] | min)')" = true ] ||
		fail "$n: window samples"
	local acc
	acc=$(summary "$f" .prequential.accuracy)
	awk -v a="$acc" 'BEGIN {exit !(a > 0.5)}' || fail "$n: prequential accuracy $acc"
	grep -q "preq acc [0-9.]* (last [0-9]*: [0-9.]*) loss" "$tmp/$n.err" || fail "$n: no prequential figures in the progress lines"
}

# ---- standalone worker ----
jq_conf examples/tabular/worker.json "$tmp/worker.json" worker.ckpt
"$SCADLES" worker -c "$tmp/worker.json" -b "$bs" --set source.group_id=standalone \
	>"$tmp/standalone.out" 2>"$tmp/standalone.err" || fail "standalone worker exited $?"
check_committed "$tmp/standalone.out"
[ "$(summary "$tmp/standalone.out" .trained)" -eq 20000 ] || fail "standalone: trained $(summary "$tmp/standalone.out" .trained)"
check_preq "$tmp/standalone.out"
acc=$(summary "$tmp/standalone.out" .test_accuracy)
awk -v a="$acc" -v m=$MIN_ACC 'BEGIN {exit !(a >= m)}' || fail "standalone test accuracy $acc < $MIN_ACC"
[ "$(summary "$tmp/standalone.out" '.test_confusion | [.[][]] | add')" -eq 2000 ] || fail "standalone: test confusion matrix"
"$SCADLES" eval -c "$tmp/worker.json" --checkpoint "$tmp/worker.ckpt" >"$tmp/eval0.out" 2>"$tmp/eval0.err" ||
	fail "eval of the worker's checkpoint exited $?"
grep -q "^test accuracy: $(printf '%.4f' "$acc") " "$tmp/eval0.out" ||
	fail "worker checkpoint: $(cat "$tmp/eval0.out"), the worker said $acc"
echo "standalone worker: test accuracy $acc, prequential $(summary "$tmp/standalone.out" .prequential.accuracy)"

# ---- distributed job: 2 aggregators, 2 workers ----
jq_conf examples/tabular/job.json "$tmp/job.json" agg.ckpt
for i in 0 1; do
	"$SCADLES" aggregator -c "$tmp/job.json" -b "$bs" --no-create >"$tmp/agg$i.out" 2>"$tmp/agg$i.err" &
	eval "agg${i}_pid=$!"
	pids="$pids $!"
done
sleep 2
for i in 0 1; do
	"$SCADLES" worker -c "$tmp/job.json" -b "$bs" --id $i --set train.checkpoint= \
		>"$tmp/worker$i.out" 2>"$tmp/worker$i.err" &
	eval "w${i}_pid=$!"
	pids="$pids $!"
done
wait "$w0_pid" || fail "worker 0 exited $?"
wait "$w1_pid" || fail "worker 1 exited $?"
total=0
for i in 0 1; do
	check_worker "$tmp/worker$i.out" acked
	check_preq "$tmp/worker$i.out"
	total=$((total + $(summary "$tmp/worker$i.out" .trained)))
done
# At least once: records of a partition handed over in a rebalance before
# their commit are trained again by the next owner; a bsp round a worker
# stops in (the other one gone) stays in flight (at most one batch each).
[ "$total" -ge $((20000 - 2 * 64)) ] || fail "the workers trained $total of 20000 records"
# Stop the aggregators one after the other: the last one's final checkpoint
# holds every shard's final publication.
kill -TERM "$agg0_pid"
wait "$agg0_pid" || fail "aggregator 0 exited $?"
kill -TERM "$agg1_pid"
wait "$agg1_pid" || fail "aggregator 1 exited $?"
line=$(grep 'checkpoint .*(final); test accuracy' "$tmp/agg1.err" | tail -n 1)
[ -n "$line" ] || fail "aggregator 1 wrote no final checkpoint"
job_acc=$(echo "$line" | sed 's/.*test accuracy: \([0-9.]*\) (\([0-9]*\/[0-9]*\)).*/\1 (\2)/')
awk -v a="${job_acc%% *}" -v m=$MIN_ACC 'BEGIN {exit !(a >= m)}' || fail "job test accuracy $job_acc < $MIN_ACC"
"$SCADLES" model pull -c "$tmp/job.json" -b "$bs" -o "$tmp/pulled.ckpt" 2>"$tmp/pull.err" ||
	fail "model pull exited $?: $(cat "$tmp/pull.err")"
"$SCADLES" eval -c "$tmp/job.json" --checkpoint "$tmp/pulled.ckpt" >"$tmp/eval1.out" 2>/dev/null ||
	fail "eval of the pulled model exited $?"
[ "$(cat "$tmp/eval1.out")" = "test accuracy: $job_acc" ] ||
	fail "model pull -> eval: $(cat "$tmp/eval1.out"); the job's final model: $job_acc"
"$SCADLES" eval -c "$tmp/job.json" --checkpoint "$tmp/agg.ckpt" >"$tmp/eval2.out" 2>/dev/null ||
	fail "eval of the aggregator's checkpoint exited $?"
cmp -s "$tmp/eval1.out" "$tmp/eval2.out" || fail "aggregator checkpoint: $(cat "$tmp/eval2.out")"
# The layout docs/MODEL.md documents, read by another program.
python3 examples/tabular/score.py "$tmp/pulled.ckpt" "$data/eval.csv" >"$tmp/score.out" ||
	fail "score.py exited $?"
cmp -s "$tmp/eval1.out" "$tmp/score.out" || fail "score.py: $(cat "$tmp/score.out"), scadles eval: $(cat "$tmp/eval1.out")"
echo "distributed job: $(cat "$tmp/eval1.out") (model pull -> eval = the job's final model);" \
	"workers' prequential $(summary "$tmp/worker0.out" .prequential.accuracy)," \
	"$(summary "$tmp/worker1.out" .prequential.accuracy)"
echo ok
