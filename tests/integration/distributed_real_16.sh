#!/usr/bin/env bash
# The papers' scale on a real Kafka: 16 workers, one single-partition
# Fashion-MNIST topic each (800 records, a backlog fed before the job
# starts), one aggregator, the scadles policy (rounds). The roundrobin
# assignor gives every worker a topic, the rounds never wait for a member
# without data while the group forms, every worker trains, and the job's
# model (held by worker 0 at the end) reaches 72% test accuracy with a
# 784-32-10 MLP.
. "$(dirname "$0")/distributed_real.inc"
[ -e /usr/share/datasets/fashion-mnist ] || { echo "Fashion-MNIST not installed"; exit 77; }
W=16
per=800
"$SCADLES" feed --bootstrap "$bs" --prefix "${run}d" --topics $W --count $per --rate 20000 \
	--data fmnist --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
jq -n --arg j "${run}j" --arg p "${run}d" --argjson w $W '{
  model: {input: [1, 28, 28], loss: "softmax_xent", layers: [{type: "flatten"},
          {type: "dense", units: 32}, {type: "relu"}, {type: "dense", units: 10}]},
  optim: {lr: 0.05, momentum: 0.9},
  train: {seed: 1, threads: 1},
  data: {source: "fashion-mnist", mean: 0.286, std: 0.353},
  source: {group_id: "\($j)-workers", pattern: "^\($p)\\..*"},
  streams: {format: "raw", label: "key", scale: 0.00392156862745098, mean: 0.286, std: 0.353},
  worker: {batch: "rate", window: 0.05, b_min: 4, b_max: 8, shuffle: 16, eval: false,
           progress_interval: 1, commit_interval: 0.5},
  job: {name: $j, shards: 2, workers: $w, sync: {policy: "scadles", base_batch: 128},
        codec: {name: "topk", ratio: 0.25, error_feedback: 1},
        session_timeout: 10, heartbeat_interval: 0.5, progress_interval: 5},
  kafka: {"session.timeout.ms": 10000, "heartbeat.interval.ms": 1000}
}' >"$tmp/j.json"
"$SCADLES" aggregator -c "$tmp/j.json" --bootstrap "$bs" --duration 240 \
	>"$tmp/agg.out" 2>"$tmp/agg.err" &
pagg=$!
pids="$pids $pagg"
wpids=()
for w in $(seq 0 $((W - 1))); do
	extra=()
	[ "$w" -eq 0 ] && extra=(--set worker.eval=true --set worker.eval_interval=1000)
	"$SCADLES" worker -c "$tmp/j.json" --bootstrap "$bs" --id "$w" --idle-exit 15 --duration 200 \
		"${extra[@]}" >"$tmp/w$w.out" 2>"$tmp/w$w.err" &
	wpids+=($!)
	pids="$pids $!"
done
for w in $(seq 0 $((W - 1))); do
	wait "${wpids[$w]}" || fail "worker $w exited $?"
done
kill -TERM "$pagg"
wait "$pagg" || fail "aggregator exited $?"
total=0
for w in $(seq 0 $((W - 1))); do
	f=$tmp/w$w.out
	check_worker "$f" acked
	n=$(summary "$f" .trained)
	[ "$n" -gt 0 ] || fail "worker $w trained nothing"
	total=$((total + n))
done
acc=$(summary "$tmp/w0.out" .test_accuracy)
echo "16 workers trained $total samples (each > 0); job model v$(summary "$tmp/w0.out" .job.model_version), test accuracy $acc"
awk -v a="$acc" 'BEGIN {exit !(a >= 0.72)}' || fail "test accuracy $acc < 0.72"
echo "distributed_real_16: ok"
