#!/usr/bin/env bash
# metrics_prometheus.sh — the Prometheus endpoint (metrics.listen) of a
# running job, checked with Prometheus's own tools. examples/monitoring's
# prometheus.yml and alerts.yml pass `promtool check config` / `check rules`,
# and the alert rules fire as examples/monitoring/README.md says (`promtool
# test rules` on synthetic series). A job on the embedded broker (1
# aggregator, 2 workers, asp, 2 shards), every process with
# metrics.listen=127.0.0.1:0: each logs its address, answers /healthz with
# 200 "ok" and /metrics with text format 0.0.4 that `promtool check metrics`
# finds nothing to say about, holding the families its role documents. A
# Prometheus scraping the three every second (examples/monitoring/alerts.yml
# loaded) sees every target up, every worker's scadles_train_samples_total
# and the aggregator's scadles_updates_applied_total increase between two
# queries, and evaluates every alert rule without error. The job's
# summaries then balance as in the other distributed tests. Last, a
# standalone worker whose broker is killed says 503 on /healthz once
# metrics.broker_down has passed, and scadles_broker_reachable 0.
. "$(dirname "$0")/distributed_common.inc"
for tool in prometheus promtool curl python3; do
	if ! command -v "$tool" >/dev/null; then
		echo "$tool is not installed (scripts/deps.sh installs it)"
		exit 77
	fi
done
mon=$(cd "$(dirname "$0")/../../examples/monitoring" && pwd)

# ---- the example files ----
promtool check config "$mon/prometheus.yml" >"$tmp/check_config.out" 2>&1 ||
	fail "promtool check config: $(cat "$tmp/check_config.out")"
promtool check rules "$mon/alerts.yml" >"$tmp/check_rules.out" 2>&1 ||
	fail "promtool check rules: $(cat "$tmp/check_rules.out")"
echo "examples/monitoring: promtool check config ok, check rules ok ($(grep -o '[0-9]* rules found' "$tmp/check_rules.out"))"
# The rules on synthetic series. promtool compares annotations too: the
# rules are tested without theirs (an annotations: block is every deeper
# indented line after it).
awk 'BEGIN { skip = -1 }
/^ *annotations: *$/ { match($0, /^ */); skip = RLENGTH; next }
skip >= 0 && (/^ *$/ || (match($0, /^ */) && RLENGTH > skip)) { next }
{ skip = -1; print }' "$mon/alerts.yml" >"$tmp/alerts_bare.yml"
cat >"$tmp/alerts_test.yml" <<'EOF'
rule_files:
  - alerts_bare.yml
evaluation_interval: 1m
tests:
  # Lag: w:1's sum grows and is above 10000; w:2's is high but flat, w:3's
  # grows but stays low. Pending for 10 minutes first.
  - interval: 1m
    input_series:
      - series: 'scadles_consumer_lag_records{job="scadles-workers",instance="w:1",topic="t",partition="0"}'
        values: '20000+200x40'
      - series: 'scadles_consumer_lag_records{job="scadles-workers",instance="w:1",topic="t",partition="1"}'
        values: '1000x40'
      - series: 'scadles_consumer_lag_records{job="scadles-workers",instance="w:2",topic="t",partition="0"}'
        values: '50000x40'
      - series: 'scadles_consumer_lag_records{job="scadles-workers",instance="w:3",topic="t",partition="0"}'
        values: '0+10x40'
    alert_rule_test:
      - eval_time: 5m
        alertname: ScadlesConsumerLagGrowing
      - eval_time: 30m
        alertname: ScadlesConsumerLagGrowing
        exp_alerts:
          - exp_labels: {severity: warning, job: scadles-workers, instance: "w:1"}
  # Down for 1 minute; a flapping target and another job's do not count.
  - interval: 1m
    input_series:
      - series: 'up{job="scadles-workers",instance="w:1"}'
        values: '1 1 0 0 0 0 0'
      - series: 'up{job="scadles-aggregators",instance="a:1"}'
        values: '1 0 1 0 1 0 1'
      - series: 'up{job="node",instance="n:1"}'
        values: '0x6'
    alert_rule_test:
      - eval_time: 2m
        alertname: ScadlesTargetDown
      - eval_time: 5m
        alertname: ScadlesTargetDown
        exp_alerts:
          - exp_labels: {severity: critical, job: scadles-workers, instance: "w:1"}
  # A drift event at 3m: alerted at 5m, over by 25m.
  - interval: 1m
    input_series:
      - series: 'scadles_drift_events_total{job="scadles-workers",instance="w:1"}'
        values: '0x2 1x30'
      - series: 'scadles_drift_events_total{job="scadles-workers",instance="w:2"}'
        values: '0x32'
    alert_rule_test:
      - eval_time: 5m
        alertname: ScadlesDriftDetected
        exp_alerts:
          - exp_labels: {severity: info, job: scadles-workers, instance: "w:1"}
      - eval_time: 25m
        alertname: ScadlesDriftDetected
  # Recent accuracy 0.8 -> 0.7 at 31m (0.1 below the hour's best), firing
  # 10 minutes later; window="all" is not watched, a drop of 0.03 is too small.
  - interval: 1m
    input_series:
      - series: 'scadles_prequential_accuracy{job="scadles-workers",instance="w:1",window="recent"}'
        values: '0.5+0.01x30 0.7x30'
      - series: 'scadles_prequential_accuracy{job="scadles-workers",instance="w:1",window="all"}'
        values: '0.5+0.01x30 0.7x30'
      - series: 'scadles_prequential_accuracy{job="scadles-workers",instance="w:2",window="recent"}'
        values: '0.8x30 0.77x30'
    alert_rule_test:
      - eval_time: 35m
        alertname: ScadlesPrequentialAccuracyFalling
      - eval_time: 45m
        alertname: ScadlesPrequentialAccuracyFalling
        exp_alerts:
          - exp_labels: {severity: warning, job: scadles-workers, instance: "w:1", window: recent}
  # No broker from 2m: firing 2 minutes later; a flapping one does not.
  - interval: 1m
    input_series:
      - series: 'scadles_broker_reachable{job="scadles-aggregators",instance="a:1"}'
        values: '1 1 0 0 0 0'
      - series: 'scadles_broker_reachable{job="scadles-workers",instance="w:1"}'
        values: '1 0 1 0 1 0'
    alert_rule_test:
      - eval_time: 3m
        alertname: ScadlesBrokerUnreachable
      - eval_time: 5m
        alertname: ScadlesBrokerUnreachable
        exp_alerts:
          - exp_labels: {severity: critical, job: scadles-aggregators, instance: "a:1"}
  # a:1: 1 stale in 6 consumed; a:2: 1 in 101.
  - interval: 1m
    input_series:
      - series: 'scadles_updates_stale_total{job="scadles-aggregators",instance="a:1"}'
        values: '0+10x30'
      - series: 'scadles_updates_applied_total{job="scadles-aggregators",instance="a:1"}'
        values: '0+50x30'
      - series: 'scadles_updates_stale_total{job="scadles-aggregators",instance="a:2"}'
        values: '0+1x30'
      - series: 'scadles_updates_applied_total{job="scadles-aggregators",instance="a:2"}'
        values: '0+100x30'
    alert_rule_test:
      - eval_time: 5m
        alertname: ScadlesStaleUpdates
      - eval_time: 20m
        alertname: ScadlesStaleUpdates
        exp_alerts:
          - exp_labels: {severity: warning, job: scadles-aggregators, instance: "a:1"}
  # w:1's loop stops snapshotting at 2m (the age grows from then); w:2's does
  # not. Above 60 s at 4m, firing a minute later.
  - interval: 1m
    input_series:
      - series: 'scadles_snapshot_age_seconds{job="scadles-workers",instance="w:1"}'
        values: '0.5 0.5 0 60 120 180 240'
      - series: 'scadles_snapshot_age_seconds{job="scadles-workers",instance="w:2"}'
        values: '0.5x6'
    alert_rule_test:
      - eval_time: 4m
        alertname: ScadlesLoopStalled
      - eval_time: 5m
        alertname: ScadlesLoopStalled
        exp_alerts:
          - exp_labels: {severity: critical, job: scadles-workers, instance: "w:1"}
  # w:1 paused for 20 minutes, w:2 pausing and resuming.
  - interval: 1m
    input_series:
      - series: 'scadles_paused_partitions{job="scadles-workers",instance="w:1"}'
        values: '2x20'
      - series: 'scadles_paused_partitions{job="scadles-workers",instance="w:2"}'
        values: '2 0 2 0 2 0 2 0 2 0 2 0 2 0 2 0 2 0 2 0 2'
    alert_rule_test:
      - eval_time: 5m
        alertname: ScadlesBackpressure
      - eval_time: 15m
        alertname: ScadlesBackpressure
        exp_alerts:
          - exp_labels: {severity: warning, job: scadles-workers, instance: "w:1"}
EOF
[ "$(grep -c '^      - alert: ' "$mon/alerts.yml")" -eq 8 ] ||
	fail "alerts.yml has $(grep -c '^      - alert: ' "$mon/alerts.yml") alerts; the rule tests know 8"
(cd "$tmp" && promtool test rules alerts_test.yml) >"$tmp/test_rules.out" 2>&1 ||
	fail "promtool test rules: $(cat "$tmp/test_rules.out")"
echo "promtool test rules: $(grep -c 'alertname:' "$tmp/alerts_test.yml") alert checks on synthetic series pass"

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# metrics_addr FILE PID: sets addr to the HOST:PORT of the process's
# "metrics on http://HOST:PORT/metrics" line.
metrics_addr() {
	addr=""
	for _ in $(seq 1 150); do
		addr=$(grep -o 'metrics on http://[^ /]*/metrics' "$1" | head -n 1 | sed 's|^metrics on http://||; s|/metrics$||')
		[ -n "$addr" ] && return 0
		kill -0 "$2" 2>/dev/null || fail "$1: process exited before its metrics line"
		sleep 0.1
	done
	fail "$1: no 'metrics on http://HOST:PORT/metrics' line in 15 s"
}
# healthz ADDR: sets code and body (the first line) of GET /healthz.
healthz() {
	code=$(curl -s -m 5 -o "$tmp/healthz.body" -w '%{http_code}' "http://$1/healthz") || code=000
	body=$(head -n 1 "$tmp/healthz.body" 2>/dev/null || true)
}
# wait_healthy NAME ADDR: /healthz says 200 "ok" within 15 s (503
# "starting" until the process's first snapshot).
wait_healthy() {
	for _ in $(seq 1 150); do
		healthz "$2"
		[ "$code" = 200 ] && break
		sleep 0.1
	done
	[ "$code" = 200 ] || fail "$1: GET /healthz: $code $body"
	[ "$body" = ok ] || fail "$1: GET /healthz: 200 with \"$body\", not \"ok\""
}
# check_exposition NAME ADDR ROLE FAMILY:TYPE[?]...: GET /metrics is text
# format 0.0.4, promtool check metrics says nothing about it, scadles_info
# says ROLE, and each FAMILY has its TYPE line and at least one sample (with
# "?", maybe none: a figure not measured in this run).
check_exposition() {
	local n=$1 a=$2 role=$3 ft fam typ
	shift 3
	curl -s -m 5 -D "$tmp/$n.headers" -o "$tmp/$n.prom" "http://$a/metrics" || fail "$n: GET /metrics failed"
	grep -qi '^HTTP/[0-9.]* 200' "$tmp/$n.headers" || fail "$n: GET /metrics: $(head -n 1 "$tmp/$n.headers")"
	grep -i '^content-type:' "$tmp/$n.headers" | grep -q 'text/plain; *version=0\.0\.4' ||
		fail "$n: $(grep -i '^content-type:' "$tmp/$n.headers" || echo 'no Content-Type'), not text/plain; version=0.0.4"
	# promtool check metrics exits non-zero on lint problems and prints them:
	# any output is a failure.
	local out rc=0
	out=$(promtool check metrics <"$tmp/$n.prom" 2>&1) || rc=$?
	[ "$rc" -eq 0 ] && [ -z "$out" ] || fail "$n: promtool check metrics (exit $rc): $out"
	for ft in "$@"; do
		fam=${ft%%:*} typ=${ft#*:}
		typ=${typ%\?}
		grep -q "^# TYPE $fam $typ\$" "$tmp/$n.prom" ||
			fail "$n: no '# TYPE $fam $typ' line (got: $(grep "^# TYPE $fam " "$tmp/$n.prom" || echo none))"
		[ "${ft%\?}" != "$ft" ] || grep -Eq "^${fam}(_bucket|_sum|_count)?(\{| )" "$tmp/$n.prom" ||
			fail "$n: no sample of $fam"
	done
	grep -Eq "^scadles_info\{([^}]*,)?role=\"$role\"([,}])" "$tmp/$n.prom" ||
		fail "$n: scadles_info: $(grep '^scadles_info' "$tmp/$n.prom" || echo none), expected role=\"$role\""
	check_documented "$tmp/$n.prom"
	echo "$n: http://$a/metrics: $(grep -c '^# TYPE ' "$tmp/$n.prom") families," \
		"$(grep -vc '^#' "$tmp/$n.prom") samples, promtool check metrics clean; $(grep '^scadles_info' "$tmp/$n.prom")"
}
# value FILE SAMPLE: the value of the sample line SAMPLE (name and labels).
value() {
	awk -v s="$2" 'index($0, s) == 1 && substr($0, length(s) + 1, 1) == " " {print $NF; exit}' "$1"
}
# expect_value NAME SAMPLE V [WHY]: $tmp/NAME.prom's SAMPLE equals V (as a number).
expect_value() {
	local v
	v=$(value "$tmp/$1.prom" "$2")
	awk -v v="$v" -v w="$3" 'BEGIN {exit !(v != "" && v + 0 == w + 0)}' ||
		fail "$1: $2 ${v:-absent}, expected $3${4:+ ($4)}"
}
# has NAME ERE...: each ERE matches a line of $tmp/NAME.prom.
has() {
	local n=$1 re
	shift
	for re in "$@"; do
		grep -Eq "$re" "$tmp/$n.prom" || fail "$n: no line matching $re in /metrics"
	done
}
common=(scadles_info:gauge process_resident_memory_bytes:gauge process_start_time_seconds:gauge
	scadles_broker_reachable:gauge)
worker_fams=("${common[@]}" scadles_records_total:counter scadles_records_rejected_total:counter
	scadles_records_dead_lettered_total:counter
	scadles_records_lost_total:counter scadles_buffered_samples:gauge scadles_stream_row_bytes:gauge
	scadles_consumer_lag_records:gauge scadles_assigned_partitions:gauge
	scadles_train_steps_total:counter scadles_train_samples_total:counter scadles_train_loss:gauge
	scadles_prequential_samples_total:counter scadles_prequential_accuracy:gauge
	scadles_prequential_loss:gauge scadles_model_version:gauge
	scadles_updates_total:counter scadles_network_bytes_total:counter
	scadles_compression_ratio:gauge scadles_drift_events_total:counter scadles_drift_statistic:gauge
	scadles_test_accuracy:gauge?) # no held-out set here (worker.eval false): no sample
agg_fams=("${common[@]}" scadles_grad_records_total:counter scadles_updates_applied_total:counter
	scadles_updates_rejected_total:counter
	scadles_updates_stale_total:counter scadles_updates_duplicate_total:counter
	scadles_shard_model_version:gauge scadles_shards_held:gauge scadles_network_bytes_total:counter
	scadles_model_publishes_total:counter scadles_update_staleness_versions:histogram
	scadles_round_duration_seconds:histogram scadles_update_apply_seconds:histogram)

# ---- a job, every process serving its metrics ----
start_broker mp.0:2 mp.1:2 mpsa:2 dj.grad:2 dj.model:2 dj.bcast:2 dj.inject:1 dj.ctl:1
broker_pid=${pids# }
broker_pid=${broker_pid%% *}
"$SCADLES" feed --bootstrap "$bs" --prefix mp --topics 2 --count 8000 --rate 8000 --data synth \
	--synth-n 2000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
# One topic and consumer group per worker: no rebalance.
for w in 0 1; do
	write_job "$tmp/j$w.json" "[{\"topic\": \"mp.$w\"}]" \
		"{\"source\": {\"group_id\": \"mp-$w\"}, \"metrics\": {\"listen\": \"127.0.0.1:0\"}}"
done
"$SCADLES" aggregator -c "$tmp/j0.json" --bootstrap "$bs" --idle-exit 6 >"$tmp/a.out" 2>"$tmp/a.err" &
a=$!
pids="$pids $a"
sleep 1
# Throttled and stopped after 30 s: they train all along the scrapes below.
for w in 0 1; do
	# Worker 1's drift detector fires at any rise of its error (threshold
	# 0.5, no tolerance): its drift records must reach the aggregator.
	trigger=()
	[ $w = 1 ] && trigger=(--set drift.threshold=0.5 --set drift.delta=0)
	"$SCADLES" worker -c "$tmp/j$w.json" --bootstrap "$bs" --id $w --throttle 200 --duration 30 \
		"${trigger[@]}" >"$tmp/w$w.out" 2>"$tmp/w$w.err" &
	eval "w$w=$!"
	pids="$pids $!"
done
metrics_addr "$tmp/a.err" "$a"
a_addr=$addr
metrics_addr "$tmp/w0.err" "$w0"
w0_addr=$addr
metrics_addr "$tmp/w1.err" "$w1"
w1_addr=$addr
echo "metrics: aggregator $a_addr, worker 0 $w0_addr, worker 1 $w1_addr"
for n in a w0 w1; do
	eval "wait_healthy $n \$${n}_addr"
done
echo "GET /healthz: 200 ok from all three"
wait_trained "$tmp/w0.err" 200 "$w0"
wait_trained "$tmp/w1.err" 200 "$w1"
check_exposition w0 "$w0_addr" worker "${worker_fams[@]}"
check_exposition w1 "$w1_addr" worker "${worker_fams[@]}"
check_exposition a "$a_addr" aggregator "${agg_fams[@]}"
for n in w0 w1 a; do
	expect_value $n scadles_broker_reachable 1
	has $n '^scadles_info\{.*version="[^"]+"'
done
# The labels the families are documented with.
for w in 0 1; do
	for o in consumed trained dropped rejected returned; do
		has w$w "^scadles_records_total\\{(.*,)?topic=\"mp\\.$w\"" "^scadles_records_total\\{(.*,)?outcome=\"$o\""
	done
	for win in all recent; do
		has w$w "^scadles_prequential_accuracy\\{(.*,)?window=\"$win\"" "^scadles_prequential_loss\\{(.*,)?window=\"$win\""
	done
	has w$w '^scadles_consumer_lag_records\{(.*,)?topic="mp\.[01]"' '^scadles_consumer_lag_records\{(.*,)?partition="[01]"' \
		'^scadles_updates_total\{(.*,)?state="sent"' '^scadles_updates_total\{(.*,)?state="acked"' \
		'^scadles_network_bytes_total\{(.*,)?direction="up"' '^scadles_network_bytes_total\{(.*,)?direction="down"'
done
has a '^scadles_network_bytes_total\{(.*,)?direction="in"' '^scadles_network_bytes_total\{(.*,)?direction="out"' \
	'^scadles_shard_model_version\{(.*,)?shard="0"' '^scadles_shard_model_version\{(.*,)?shard="1"' \
	'^scadles_updates_rejected_total\{(.*,)?reason="[a-z_]+"'
for n in w0 w1; do
	expect_value $n scadles_assigned_partitions 2 "its topic has 2 partitions"
done
expect_value a scadles_shards_held 2 "the only aggregator of 2 shards"
# Each histogram: cumulative buckets ending in le="+Inf", which is _count.
for h in scadles_update_staleness_versions scadles_round_duration_seconds scadles_update_apply_seconds; do
	awk -v h="$h" '
	index($0, h "_bucket{") == 1 { if ($NF + 0 < last) bad = "buckets decrease"; last = $NF + 0; n++
	                               inf = ($0 ~ /le="\+Inf"/) ? $NF + 0 : -1 }
	index($0, h "_count ") == 1 { count = $NF + 0 }
	END { if (n < 2) bad = "no buckets"; else if (inf != count) bad = "le=\"+Inf\" " inf " != _count " count
	      if (bad != "") { print bad; exit 1 } }' "$tmp/a.prom" >"$tmp/hist.out" ||
		fail "a: histogram $h: $(cat "$tmp/hist.out")"
done

# ---- a Prometheus scraping them every second ----
pport=$(free_port) || fail "no free port"
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $mon/alerts.yml
scrape_configs:
  - job_name: scadles-workers
    static_configs:
      - targets: ['$w0_addr', '$w1_addr']
  - job_name: scadles-aggregators
    static_configs:
      - targets: ['$a_addr']
EOF
promtool check config "$tmp/prometheus.yml" >"$tmp/check_tmp.out" 2>&1 ||
	fail "promtool check config (the test's): $(cat "$tmp/check_tmp.out")"
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
	--web.listen-address="127.0.0.1:$pport" >"$tmp/prometheus.out" 2>"$tmp/prometheus.err" &
prom=$!
pids="$pids $prom"
papi="http://127.0.0.1:$pport/api/v1"
# query EXPR: instance value lines, sorted.
query() {
	curl -s -m 5 --get --data-urlencode "query=$1" "$papi/query" >"$tmp/query.json" ||
		fail "Prometheus query $1 failed"
	[ "$(jq -r .status "$tmp/query.json")" = success ] || fail "Prometheus query $1: $(cat "$tmp/query.json")"
	jq -r '.data.result[] | "\(.metric.instance) \(.value[1])"' "$tmp/query.json" | sort
}
ups=""
for _ in $(seq 1 300); do
	kill -0 "$prom" 2>/dev/null || fail "prometheus exited: $(tail -n 5 "$tmp/prometheus.err")"
	if curl -s -m 2 -o /dev/null "$papi/query?query=up"; then
		ups=$(query 'up{job=~"scadles-.*"}')
		[ "$(echo "$ups" | awk '$2 == "1"' | wc -l)" -eq 3 ] && break
	fi
	sleep 0.1
done
[ "$(echo "$ups" | awk '$2 == "1"' | wc -l)" -eq 3 ] ||
	fail "Prometheus: not every target up after 30 s: ${ups:-no answer}; targets: $(curl -s "$papi/targets" | jq -c '[.data.activeTargets[] | {scrapeUrl, health, lastError}]')"
echo "Prometheus on 127.0.0.1:$pport: up =" $ups
s1=$(query scadles_train_samples_total)
u1=$(query scadles_updates_applied_total)
sleep 4
s2=$(query scadles_train_samples_total)
u2=$(query scadles_updates_applied_total)
echo "scadles_train_samples_total:" $s1 "->" $s2
echo "scadles_updates_applied_total:" $u1 "->" $u2
# increased BEFORE AFTER N: N instances, each one's value grew.
increased() {
	[ "$(echo "$1" | grep -c .)" -eq "$3" ] && [ "$(join <(echo "$1") <(echo "$2") | awk '$3 > $2' | wc -l)" -eq "$3" ]
}
increased "$s1" "$s2" 2 || fail "scadles_train_samples_total did not increase on both workers"
increased "$u1" "$u2" 1 || fail "scadles_updates_applied_total did not increase on the aggregator"
# Every alert rule evaluated on the live series, without error.
for _ in $(seq 1 100); do
	curl -s -m 5 "$papi/rules" >"$tmp/rules.json" || true
	[ "$(jq '[.data.groups[].rules[] | select(.health == "unknown")] | length' "$tmp/rules.json" 2>/dev/null)" = 0 ] && break
	sleep 0.1
done
[ "$(jq '[.data.groups[].rules[]] | length' "$tmp/rules.json")" -eq 8 ] ||
	fail "Prometheus loaded $(jq '[.data.groups[].rules[]] | length' "$tmp/rules.json") rules of alerts.yml, not 8"
[ "$(jq '[.data.groups[].rules[] | select(.health != "ok")] | length' "$tmp/rules.json")" -eq 0 ] ||
	fail "alert rules not ok: $(jq -c '[.data.groups[].rules[] | select(.health != "ok") | {name, health, lastError}]' "$tmp/rules.json")"
echo "alerts.yml on the live series: 8 rules evaluated, all ok; alerts pending or firing:" \
	"$(jq -r '[.data.groups[].rules[] | select(.state != "inactive") | .name] | join(", ") | if . == "" then "none" else . end' "$tmp/rules.json")"
kill "$prom" 2>/dev/null || true
wait "$prom" 2>/dev/null || true

# ---- the job's end ----
wait "$w0" || fail "worker 0 exited $?"
wait "$w1" || fail "worker 1 exited $?"
wait "$a" || fail "aggregator exited $?"
for w in 0 1; do
	check_worker "$tmp/w$w.out" acked
	# What Prometheus saw is at most what the worker trained in all.
	seen=$(echo "$s2" | awk -v i="$(eval echo "\$w${w}_addr")" '$1 == i {print $2}')
	awk -v s="$seen" -v t="$(summary "$tmp/w$w.out" .trained)" 'BEGIN {exit !(s + 0 > 0 && s + 0 <= t + 0)}' ||
		fail "worker $w: Prometheus saw scadles_train_samples_total $seen, the summary says trained $(summary "$tmp/w$w.out" .trained)"
	echo "worker $w: trained $(summary "$tmp/w$w.out" .trained), updates sent $(summary "$tmp/w$w.out" .job.updates_sent), acked $(summary "$tmp/w$w.out" .job.updates_acked)"
done
seen=$(echo "$u2" | awk '{print $2}')
awk -v s="$seen" -v t="$(summary "$tmp/a.out" .applied)" 'BEGIN {exit !(s + 0 > 0 && s + 0 <= t + 0)}' ||
	fail "aggregator: Prometheus saw scadles_updates_applied_total $seen, the summary says applied $(summary "$tmp/a.out" .applied)"
echo "aggregator: applied $(summary "$tmp/a.out" .applied), stale $(summary "$tmp/a.out" .stale), duplicates $(summary "$tmp/a.out" .duplicates)"
check_exactly_once "$tmp/a.out" "$tmp/w0.out" "$tmp/w1.out"
# Drift records on J.ctl: worker 1's events reached the aggregator (at most
# one record a turn of the worker's loop, so no more records than events).
ev1=$(summary "$tmp/w1.out" .drift.events)
dr=$(summary "$tmp/a.out" .drift_reports)
ev=$((ev1 + $(summary "$tmp/w0.out" .drift.events)))
[ "$ev1" -ge 1 ] || fail "worker 1 (drift.threshold 0.5) had no drift event"
[ "$dr" -ge 1 ] && [ "$dr" -le "$ev" ] || fail "aggregator: $dr drift records for $ev events"
grep -q 'worker 1: drift: its prequential error rose' "$tmp/a.err" || fail "aggregator: no drift line of worker 1"
echo "drift: worker 1 had $ev1 events (threshold 0.5), the aggregator read $dr drift records for the $ev events"

# ---- /healthz without a broker ----
write_config "$tmp/sa.json" '[{"topic": "mpsa"}]' \
	'{"source": {"group_id": "mpsa"}, "metrics": {"listen": "127.0.0.1:0", "broker_down": 2}}'
"$SCADLES" worker -c "$tmp/sa.json" --bootstrap "$bs" >"$tmp/sa.out" 2>"$tmp/sa.err" &
sa=$!
pids="$pids $sa"
metrics_addr "$tmp/sa.err" "$sa"
sa_addr=$addr
wait_healthy sa "$sa_addr"
kill -9 "$broker_pid"
wait "$broker_pid" 2>/dev/null || true
start=$(date +%s)
for _ in $(seq 1 150); do
	healthz "$sa_addr"
	[ "$code" = 503 ] && break
	kill -0 "$sa" 2>/dev/null || fail "the standalone worker exited when its broker went"
	sleep 0.1
done
[ "$code" = 503 ] || fail "/healthz still $code $body 15 s after the broker was killed (metrics.broker_down 2)"
secs=$(($(date +%s) - start))
curl -s -m 5 -o "$tmp/sa.prom" "http://$sa_addr/metrics" || fail "sa: GET /metrics failed"
expect_value sa scadles_broker_reachable 0 "no broker"
echo "standalone worker, broker killed: /healthz 503 \"$body\" after ~${secs} s, scadles_broker_reachable 0"
echo "ok"
