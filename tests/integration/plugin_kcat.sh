#!/usr/bin/env bash
# The interceptor plugin in kcat, unmodified, on the embedded broker: kcat
# with plugin.library.paths=libscadles trains on what it consumes (every
# record trained, test accuracy reported); bad scadles.* properties are
# rejected by kcat's own config call with a readable message; producers are
# left alone; loading, training and unloading leak nothing (valgrind); in
# distributed mode every update reaches an aggregator.
set -eu
BUILD=${BUILD:-build}
SCADLES=${SCADLES:-$BUILD/scadles}
top=$PWD
. "$(dirname "$0")/worker_common.inc"
use_plugin
[ -e /usr/share/datasets/fashion-mnist ] || { echo "Fashion-MNIST is not installed"; exit 77; }
start_broker pk:4 pkj.grad:2 pkj.model:2 pkj.bcast:2 pkj.inject:1 pkj.ctl:1
"$SCADLES" feed --bootstrap "$bs" --topic pk --count 6000 --rate 20000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" ||
	fail "feed failed"
job="$top/examples/kcat/job.json"
plug=(-X plugin.library.paths=libscadles -X "scadles.config=$job")

# 1) kcat trains on everything it consumes.
n=$(kcat -C -b "$bs" -t pk -o beginning -e -q -f '%o\n' "${plug[@]}" \
	-X "scadles.summary.file=$tmp/summary.json" -X scadles.queue.block.ms=-1 \
	-X "scadles.train.checkpoint=$tmp/plugin.ckpt" -X scadles.worker.progress_interval=0.2 \
	-X scadles.log.level=6 \
	-X scadles.worker.batch=fixed -X scadles.worker.b=32 2>"$tmp/kcat.err" | wc -l)
[ "$n" -eq 6000 ] || fail "kcat printed $n records, expected 6000"
[ -s "$tmp/summary.json" ] || fail "no summary written"
s() { jq -r "$1" "$tmp/summary.json"; }
[ "$(s .queue.pushed)" -eq 6000 ] || fail "plugin saw $(s .queue.pushed) records"
[ "$(s .consumed)" -eq 6000 ] || fail "worker consumed $(s .consumed)"
[ "$(s '.queue.dropped + .queue.refused + .rejected')" -eq 0 ] || fail "records dropped: $(cat "$tmp/summary.json")"
left=$(s '.consumed - .trained')
[ "$left" -lt 32 ] || fail "$left records not trained"
acc=$(s .test_accuracy)
awk -v a="$acc" 'BEGIN { exit !(a >= 0.60) }' || fail "test accuracy $acc < 0.60 after 6000 records"
grep -q '^scadles: test accuracy: ' "$tmp/kcat.err" || fail "no accuracy line on stderr"
# Prequential: every trained sample scored before it trained, counted in the
# confusion matrix, accuracy its diagonal's share; on stderr as well.
[ "$(s '.prequential.samples == .trained')" = true ] || fail "prequential samples $(s .prequential.samples) != trained $(s .trained)"
[ "$(s '.prequential as $p | ([$p.confusion[][]] | add) == $p.samples and (([range(0; 10) | $p.confusion[.][.]] | add) / $p.samples - $p.accuracy | fabs) < 1e-12')" = true ] ||
	fail "prequential figures do not match their confusion matrix: $(s .prequential)"
grep -q '^scadles: prequential accuracy: ' "$tmp/kcat.err" || fail "no prequential line on stderr"
grep -q 'preq acc ' "$tmp/kcat.err" || fail "no prequential figures in the progress lines"
# The model out of the plugin: its checkpoint scores the summary's accuracy.
"$SCADLES" eval -c "$job" --checkpoint "$tmp/plugin.ckpt" >"$tmp/eval.out" 2>/dev/null || fail "eval of the plugin's checkpoint"
grep -q "^test accuracy: $(printf '%.4f' "$acc") " "$tmp/eval.out" || fail "plugin checkpoint: $(cat "$tmp/eval.out"), summary $acc"
echo "kcat: 6000 consumed, $(s .trained) trained, test accuracy $acc, prequential $(s .prequential.accuracy)"

# 1b) The plugin's worker serves /metrics and /healthz with
# scadles.metrics.listen (off by default): kcat, left running, is scraped.
kcat -C -b "$bs" -t pk -o beginning -q -f '' "${plug[@]}" -X scadles.log.level=6 \
	-X scadles.metrics.listen=127.0.0.1:0 -X scadles.worker.eval=false >/dev/null 2>"$tmp/kcat_m.err" &
km=$!
pids="$pids $km"
maddr=""
for _ in $(seq 1 100); do
	maddr=$(grep -o 'metrics on http://[0-9.]*:[0-9]*' "$tmp/kcat_m.err" | head -n 1 | sed 's|.*http://||')
	[ -n "$maddr" ] && break
	kill -0 $km 2>/dev/null || fail "kcat with scadles.metrics.listen exited: $(tail -n 3 "$tmp/kcat_m.err")"
	sleep 0.1
done
[ -n "$maddr" ] || fail "the plugin logged no metrics address"
trained=0
for _ in $(seq 1 150); do
	curl -s -m 5 "http://$maddr/metrics" >"$tmp/plugin.prom" || true
	trained=$(awk '$1 == "scadles_train_samples_total" {print $2}' "$tmp/plugin.prom")
	[ "${trained:-0}" -ge 5000 ] && break
	sleep 0.2
done
[ "${trained:-0}" -ge 5000 ] || fail "plugin's /metrics: scadles_train_samples_total ${trained:-absent} after 30 s"
[ "$(curl -s -m 5 "http://$maddr/healthz")" = ok ] || fail "plugin's /healthz: $(curl -s -m 5 "http://$maddr/healthz")"
grep -q '^scadles_info{role="worker"' "$tmp/plugin.prom" || fail "plugin's /metrics has no scadles_info"
check_documented "$tmp/plugin.prom"
if command -v promtool >/dev/null; then
	out=$(promtool check metrics <"$tmp/plugin.prom" 2>&1) || fail "promtool check metrics: $out"
	[ -z "$out" ] || fail "promtool check metrics: $out"
fi
kill -TERM $km
wait $km 2>/dev/null || true
echo "plugin: /metrics on $maddr (scadles_train_samples_total $trained), /healthz ok"
if grep -q 'metrics on' "$tmp/kcat.err"; then fail "the plugin served metrics without scadles.metrics.listen"; fi

# 2) Bad properties: kcat's config call fails with the plugin's message.
bad() { # expected-substring kcat-args...
	local want=$1
	shift
	if kcat -C -b "$bs" -t pk -o beginning -e -q -X plugin.library.paths=libscadles "$@" \
		>/dev/null 2>"$tmp/bad.err"; then
		fail "accepted: $*"
	fi
	grep -qF -- "$want" "$tmp/bad.err" || fail "no '$want' in: $(cat "$tmp/bad.err")"
}
bad 'scadles.optim.lr' -X "scadles.config=$job" -X scadles.optim.lr=fast
bad 'scadles.optim.nosuch' -X "scadles.config=$job" -X scadles.optim.nosuch=1
bad '/nonexistent/job.json' -X scadles.config=/nonexistent/job.json
bad 'never load plugins' -X "scadles.config=$job" -X scadles.kafka.plugin.library.paths=libscadles
bad 'scadles.queue.full.policy' -X "scadles.config=$job" -X scadles.queue.full.policy=maybe
echo "bad scadles.* properties rejected by kcat's config call"

# 3) A producer with the plugin loaded is left alone.
seq 1 5 | kcat -P -b "$bs" -t pk.prod "${plug[@]}" 2>"$tmp/prod.err" || fail "producer with plugin failed"
[ "$(kcat -C -b "$bs" -t pk.prod -o beginning -e -q | wc -l)" -eq 5 ] || fail "producer lost records"
echo "producer unaffected"

# 4) Loading, training and unloading leak nothing.
if command -v valgrind >/dev/null; then
	valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9 \
		--log-file="$tmp/vg.err" kcat -C -b "$bs" -t pk -o beginning -c 300 -q -f '' "${plug[@]}" \
		-X scadles.eval=false -X scadles.worker.eval=false >/dev/null 2>&1 ||
		fail "kcat under valgrind exited $? (see vg.err)"
	grep -q 'definitely lost: 0 bytes\|no leaks are possible' "$tmp/vg.err" ||
		fail "valgrind: $(grep -A4 'LEAK SUMMARY' "$tmp/vg.err")"
	echo "valgrind: $(grep -E 'definitely lost|no leaks are possible' "$tmp/vg.err" | sed 's/^==[0-9]*== *//')"
else
	echo "valgrind not installed: leak check skipped"
fi
# 5) Distributed: the embedded worker sends its updates to J.grad through its
#    own producer (which does not load the plugin again); an aggregator
#    applies every one of them.
jq '.model.layers = [{type: "flatten"}, {type: "dense", units: 16}, {type: "relu"},
                     {type: "dense", units: 10}]
    | .worker.batch = "fixed" | .worker.b = 32
    | .job = {name: "pkj", shards: 2, workers: 1, sync: {policy: "asp"}, session_timeout: 6,
              heartbeat_interval: 0.5, progress_interval: 1}' "$job" >"$tmp/dist.json"
"$SCADLES" aggregator -c "$tmp/dist.json" --bootstrap "$bs" --idle-exit 4 >"$tmp/agg.out" 2>"$tmp/agg.err" &
apid=$!
sleep 1
kcat -C -b "$bs" -t pk -o beginning -c 2000 -q -f '' -X plugin.library.paths=libscadles \
	-X "scadles.config=$tmp/dist.json" -X scadles.distributed=true -X scadles.worker.id=0 \
	-X "scadles.summary.file=$tmp/dist-summary.json" -X scadles.queue.block.ms=-1 \
	2>"$tmp/dist.err" || fail "distributed kcat exited $?"
wait "$apid" || fail "aggregator exited $?"
sent=$(jq -r .job.updates_sent "$tmp/dist-summary.json")
acked=$(jq -r .job.updates_acked "$tmp/dist-summary.json")
applied=$(grep '^summary: ' "$tmp/agg.out" | sed 's/^summary: //' | jq -r .applied)
[ "$sent" -gt 0 ] && [ "$sent" -eq "$acked" ] && [ "$acked" -eq "$applied" ] ||
	fail "distributed: sent $sent, acknowledged $acked, applied $applied"
grep -q 'plugin' "$tmp/dist.err" && fail "the worker's own clients mention the plugin: $(cat "$tmp/dist.err")"
echo "distributed: $sent updates sent, acknowledged and applied"
echo "plugin_kcat: ok"
