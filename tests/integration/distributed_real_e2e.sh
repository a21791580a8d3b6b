#!/usr/bin/env bash
# End to end on a real Apache Kafka (SCADLES_KAFKA=host:port; skipped
# without it): Fashion-MNIST fed to two topics (30,000 images each), one
# aggregator, two workers (scadles policy, top-k 25% with error feedback,
# following J.model). Worker 0's model must reach 82% test accuracy on the
# 10,000 test images, with every update acknowledged, exact record
# accounting, nothing lost, every data partition committed to its end. The
# aggregator and worker 0 serve Prometheus metrics (metrics.listen): both
# expositions pass promtool with their counters moving.
. "$(dirname "$0")/distributed_real.inc"
data=/usr/share/datasets/fashion-mnist
[ -e "$data" ] || { echo "Fashion-MNIST not installed"; exit 77; }
for w in 0 1; do
	jq -n --arg run "$run" --arg topic "$run.d.$w" --arg bs "$bs" --argjson ev $((1 - w)) '{
	  model: {input: [1, 28, 28], loss: "softmax_xent",
	          layers: [{type: "flatten"}, {type: "dense", units: 128}, {type: "relu"},
	                   {type: "dense", units: 10}]},
	  optim: {lr: 0.08, momentum: 0.9,
	          schedule: {type: "cosine", total_steps: 240, min_lr: 0.004}},
	  train: {seed: 1, threads: 1},
	  data: {source: "fashion-mnist", mean: 0.286, std: 0.353},
	  source: {group_id: "\($run)-w\($ev)", topics: [{topic: $topic}]},
	  streams: {format: "raw", label: "key", scale: 0.00392156862745098, mean: 0.286,
	            std: 0.353, policy: "persist", cap: 4096},
	  worker: {batch: "rate", window: 0.1, b_min: 16, b_max: 128, shuffle: 256,
	           progress_interval: 1, eval: ($ev == 1), eval_interval: 0},
	  job: {name: $run, shards: 4, workers: 2, sync: {policy: "scadles", base_batch: 128},
	        codec: {name: "topk", ratio: 0.25, error_feedback: 1},
	        session_timeout: 6, progress_interval: 5},
	  kafka: {"bootstrap.servers": $bs, "fetch.wait.max.ms": 5,
	          "session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
	}' >"$tmp/j$w.json"
done
"$SCADLES" feed --bootstrap "$bs" --prefix "$run.d" --topics 2 --count 30000 --rate 4000 \
	--data fmnist --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
real_create_job "$tmp/j0.json"
"$SCADLES" aggregator -c "$tmp/j0.json" --idle-exit 20 --set metrics.listen=127.0.0.1:0 \
	>"$tmp/a.out" 2>"$tmp/a.err" &
a=$!
pids="$pids $a"
sleep 2
for w in 0 1; do
	"$SCADLES" worker -c "$tmp/j$w.json" --id $w --idle-exit 6 --set metrics.listen=127.0.0.1:0 \
		>"$tmp/w$w.out" 2>"$tmp/w$w.err" &
	eval "w$w=$!"
	pids="$pids $!"
done
scrape_until worker0 "$tmp/w0.err" "$w0" scadles_train_samples_total
echo "worker 0: /metrics clean, scadles_train_samples_total $scraped"
scrape_until aggregator "$tmp/a.err" "$a" scadles_updates_applied_total
echo "aggregator: /metrics clean, scadles_updates_applied_total $scraped"
wait "$w0" || fail "worker 0 exited $?"
wait "$w1" || fail "worker 1 exited $?"
wait "$a" || fail "aggregator exited $?"
for w in 0 1; do
	f="$tmp/w$w.out"
	check_worker "$f" acked
	[ "$(summary "$f" .trained)" -eq 30000 ] || fail "worker $w trained $(summary "$f" .trained)"
	check_committed "$f"
done
acc=$(summary "$tmp/w0.out" .test_accuracy)
echo "worker 0: test accuracy $acc on $(summary "$tmp/w0.out" .test_samples) images"
awk -v a="$acc" 'BEGIN {exit !(a >= 0.82)}' || fail "test accuracy $acc < 0.82"
echo "ok on a real broker: accuracy $acc"
