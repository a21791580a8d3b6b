#!/usr/bin/env bash
# distributed.sh — end-to-end figures of a distributed job (one aggregator,
# two workers, 4 shards, top-k 10%; asp, bsp and scadles) on Fashion-MNIST
# records fed to one topic per worker before the job starts: training
# samples/s across the workers (trained / busy wall time, from their
# summaries) next to one standalone worker's on the same backlog and model,
# updates/s the aggregator applied, and update latency percentiles from the
# workers' summaries (produce -> acknowledged, produce -> applied and visible
# in J.model: for bsp and scadles the round latency). Runs on the embedded
# broker, then on a real Apache Kafka:
# SCADLES_KAFKA=host:port, else one scripts/kafka.sh reports running (or
# starts, and stops afterwards; KAFKA_PORT/KAFKA_DIR as for kafka.sh).
# Usage: bench/distributed.sh [records per worker]   (BUILD=build-dir; ONLY=live
# runs the live-feed latency rows alone)
set -u
BUILD=${BUILD:-build}
SCADLES=${SCADLES:-$(realpath -m "$BUILD")/scadles}
# The fake workers and checker (tests/tools/agg_selftest.c), built by make
# next to the command.
AGG_SELFTEST=${AGG_SELFTEST:-$(dirname "$SCADLES")/tools/agg_selftest}
N=${1:-8000}
IDLE=3
here=$(cd "$(dirname "$0")" && pwd)

for tool in jq; do
	command -v "$tool" >/dev/null ||
		{ echo "distributed.sh: $tool is not installed (scripts/deps.sh installs it)" >&2; exit 1; }
done
[ -x "$SCADLES" ] || { echo "distributed.sh: $SCADLES not built (make)" >&2; exit 1; }
[ -e /usr/share/datasets/fashion-mnist ] ||
	{ echo "distributed.sh: Fashion-MNIST not installed (scripts/deps.sh installs it)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/scadles-bench-dist.XXXXXX")
pids=""
kafka_started=0
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
	for p in $pids; do wait "$p" 2>/dev/null || true; done
	[ $kafka_started = 1 ] && "$here/../scripts/kafka.sh" down >/dev/null 2>&1
	if [ -n "${KEEP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# sum FILE JQ: the summary line of FILE, evaluated with JQ.
summ() { grep '^summary: ' "$1" | tail -n 1 | sed 's/^summary: //' | jq -r "$2"; }

# kc_for BOOTSTRAP: the kafka_consumer section for that broker. The embedded
# broker answers an empty fetch only after the whole fetch.wait.max.ms (a
# record produced meanwhile does not cut the wait short, docs/BROKERS.md):
# its jobs run with EMBEDDED_FETCH_WAIT_MS (default 2); a real broker answers
# as soon as a record arrives and keeps the runtime's default.
kc_for() {
	if [ "$1" = "${embedded_bs:-}" ]; then
		jq -n --argjson w "${EMBEDDED_FETCH_WAIT_MS:-2}" '{"fetch.wait.max.ms": $w}'
	else
		echo '{}'
	fi
}

# job_config FILE RUN BOOTSTRAP WORKER PUBLISH POLICY (POLICY "standalone":
# no job section; PUBLISH interval: also no bound on a worker's own updates
# in flight, job.sync.max_inflight 0, the asp defaults before the bound)
job_config() {
	jq -n --arg run "$2" --arg bs "$3" --argjson w "$4" --arg pub "$5" --arg pol "$6" \
		--argjson kc "$(kc_for "$3")" '{
	  model: {input: [1, 28, 28], loss: "softmax_xent",
	          layers: [{type: "flatten"}, {type: "dense", units: 128}, {type: "relu"},
	                   {type: "dense", units: 10}]},
	  optim: {lr: 0.05, momentum: 0.9},
	  train: {seed: 1, threads: 1},
	  source: {group_id: "\($run)-w\($w)", topics: [{topic: "\($run).d.\($w)"}]},
	  streams: {format: "raw", label: "key", scale: 0.00392156862745098, mean: 0.286,
	            std: 0.353},
	  worker: {batch: "rate", window: 0.01, b_min: 16, b_max: 64, shuffle: 0, eval: false,
	           progress_interval: 0.1},
	  job: {name: $run, shards: 4, workers: 2,
	        sync: ({policy: $pol} + (if $pol == "scadles" then {base_batch: 128} else {} end)
	               + (if $pub == "interval" then {max_inflight: 0} else {} end)),
	        codec: {name: "topk", ratio: 0.1}, publish: $pub, session_timeout: 6,
	        progress_interval: 1,
	        heartbeat_interval: 0.5},
	  kafka: {"bootstrap.servers": $bs,
	          "session.timeout.ms": 6000, "heartbeat.interval.ms": 500},
	  kafka_consumer: $kc
	} | if $pol == "standalone" then del(.job) | .source.group_id += "-standalone" else . end' >"$1"
}

# busy FILE TRAINED: seconds from the first sample trained to the last, from
# the progress lines (every 0.1 s) of FILE, each end the midpoint of the two
# lines around it.
busy() {
	awk -v n="$2" '
	    match($0, /[0-9.]+ s  in /) {
		t = substr($0, RSTART, RLENGTH) + 0
		if (!match($0, /trained [0-9]+/)) next
		k = substr($0, RSTART + 8, RLENGTH - 8) + 0
		if (k == 0) z = t
		else if (a == "") a = (z + t) / 2
		if (k < n) p = t
		else if (b == "") b = (p + t) / 2
	    }
	    match($0, /stopped .* after [0-9.]+ s/) {
		if (b == "" && match($0, /after [0-9.]+ s/))
			b = substr($0, RSTART + 6, RLENGTH - 8) + 0
	    }
	    END { if (a == "" || b == "" || b <= a) print 0; else printf "%.2f", b - a }' "$1"
}

# latency LABEL DIR: the workers' latency percentiles (acked, visible).
latency() {
	local k lat
	for k in acked visible; do
		lat=$(for w in 0 1; do
			summ "$2/w$w.out" ".job.latency_ms.$k | \"w$w n \(.n) p50 \(.p50) p95 \(.p95) p99 \(.p99)\""
		done | paste -sd';' | sed 's/;/; /')
		printf '%-22s latency produce->%-7s ms: %s\n' "$1" "$k" "$lat"
	done
}

# run_standalone LABEL BOOTSTRAP RUN: one standalone worker on the backlog
# of worker 0's topic (its own group), same model; sets $alone (samples/s).
run_standalone() {
	local d="$tmp/$3" tr b
	job_config "$d/s.json" "$3" "$2" 0 auto standalone
	"$SCADLES" worker -c "$d/s.json" --idle-exit $IDLE >"$d/s.out" 2>"$d/s.err" ||
		echo "$1: standalone worker exited $?"
	tr=$(summ "$d/s.out" .trained)
	b=$(busy "$d/s.err" "$tr")
	alone=$(awk -v t="$tr" -v b="$b" 'BEGIN {printf "%.0f", (b > 0 ? t / b : 0)}')
	printf '%-22s samples/s %6d (one standalone worker: %s in %s s)\n' "$1/standalone" "$alone" "$tr" "$b"
}

# run_job LABEL BOOTSTRAP RUN REAL PUBLISH POLICY: feed, aggregator, two
# workers; prints the figures (and, after the first job of a broker, one
# standalone worker's on the same backlog).
run_job() {
	local label="$1/$6/$5" bs=$2 run=$3 real=$4 d="$tmp/$3" a w0 w1
	mkdir -p "$d"
	for w in 0 1; do job_config "$d/j$w.json" "$run" "$bs" $w "$5" "$6"; done
	if ! "$SCADLES" feed --bootstrap "$bs" --prefix "$run.d" --topics 2 --count "$N" \
		--rate 20000 --data fmnist --quiet >"$d/feed.out" 2>"$d/feed.err"; then
		echo "$label: feed failed: $(tail -n 2 "$d/feed.err")"
		return
	fi
	if [ "$real" = 1 ]; then
		"$AGG_SELFTEST" ctl join -c "$d/j0.json" --worker 0 \
			>"$d/create.out" 2>"$d/create.err" || { echo "$label: creating the job failed"; return; }
		sleep 2
	fi
	"$SCADLES" aggregator -c "$d/j0.json" --idle-exit 8 >"$d/a.out" 2>"$d/a.err" &
	a=$!
	pids="$pids $a"
	sleep 1
	"$SCADLES" worker -c "$d/j0.json" --id 0 --idle-exit $IDLE >"$d/w0.out" 2>"$d/w0.err" &
	w0=$!
	"$SCADLES" worker -c "$d/j1.json" --id 1 --idle-exit $IDLE >"$d/w1.out" 2>"$d/w1.err" &
	w1=$!
	pids="$pids $w0 $w1"
	wait "$w0" || echo "$label: worker 0 exited $?"
	wait "$w1" || echo "$label: worker 1 exited $?"
	wait "$a" || echo "$label: aggregator exited $?"
	for f in "$d/w0.out" "$d/w1.out" "$d/a.out"; do
		grep -q '^summary: ' "$f" || { echo "$label: no summary in $(basename "$f")"; return; }
	done
	# busy wall time, from the progress lines (every 0.1 s): from the first
	# sample trained to the last, each end the midpoint of the two lines
	# around it
	local sps=0 line=""
	for w in 0 1; do
		local f="$d/w$w.out" tr b r
		tr=$(summ "$f" .trained)
		b=$(busy "$d/w$w.err" "$tr")
		r=$(awk -v t="$tr" -v b="$b" 'BEGIN {printf "%.0f", (b > 0 ? t / b : 0)}')
		sps=$((sps + r))
		line="$line w$w $tr in $b s;"
	done
	[ "$5" = interval ] && run_standalone "$1" "$bs" "$run"
	printf '%-22s samples/s %6d (%s)%s\n' "$label" "$sps" "${line%;}" \
		"$(awk -v s="$sps" -v a="${alone:-0}" 'BEGIN { if (a > 0) printf "; %.0f%% of standalone", 100 * s / a }')"
	printf '%-22s updates applied %s, %s/s while flowing (%s/s over %.1f s), dup %s\n' "$label" \
		"$(summ "$d/a.out" .applied)" "$(summ "$d/a.out" .busy_updates_per_s)" \
		"$(summ "$d/a.out" .updates_per_s)" "$(summ "$d/a.out" .busy_s)" \
		"$(summ "$d/a.out" .duplicates)"
	latency "$label" "$d"
}

# run_live LABEL BOOTSTRAP RUN POLICY: the job running first, then a live
# feed of LIVE_RATE samples/s per worker's topic for 15 s (every version
# published); prints the latency percentiles.
LIVE_RATE=${LIVE_RATE:-200}
run_live() {
	local label="$1/$4/live" bs=$2 run=$3 d="$tmp/$3" a w0 w1
	mkdir -p "$d"
	for w in 0 1; do job_config "$d/j$w.json" "$run" "$bs" $w every "$4"; done
	# one record each first: the topics exist before the workers subscribe
	"$SCADLES" feed --bootstrap "$bs" --prefix "$run.d" --topics 2 --count 1 --data synth \
		--synth-n 10 --quiet >/dev/null 2>&1
	"$SCADLES" aggregator -c "$d/j0.json" --duration 40 >"$d/a.out" 2>"$d/a.err" &
	a=$!
	sleep 1
	"$SCADLES" worker -c "$d/j0.json" --id 0 --duration 28 >"$d/w0.out" 2>"$d/w0.err" &
	w0=$!
	"$SCADLES" worker -c "$d/j1.json" --id 1 --duration 28 >"$d/w1.out" 2>"$d/w1.err" &
	w1=$!
	pids="$pids $a $w0 $w1"
	sleep 6
	"$SCADLES" feed --bootstrap "$bs" --prefix "$run.d" --topics 2 --count $((LIVE_RATE * 15)) \
		--rate $((2 * LIVE_RATE)) --data fmnist --quiet >"$d/feed.out" 2>"$d/feed.err"
	wait "$w0" || echo "$label: worker 0 exited $?"
	wait "$w1" || echo "$label: worker 1 exited $?"
	kill "$a" 2>/dev/null
	wait "$a"
	latency "$label" "$d"
}

echo "distributed job: 2 workers x $N Fashion-MNIST records, 1 aggregator, 4 shards, top-k 10%;"
echo "asp with J.model published by interval (1 s) and no bound on a worker's own updates in"
echo "flight (job.sync.max_inflight 0), or every version (the defaults); bsp and"
echo "scadles (every version); one standalone worker on worker 0's backlog for comparison;"
echo "then latency with a live feed of $LIVE_RATE samples/s per worker (asp and bsp, every version)"
# two partitions per data topic: the embedded broker keeps ~5 MiB per partition
targs=()
for r in ea eb ec ed ee ef; do
	targs+=(--topic "$r.d.0:2" --topic "$r.d.1:2" --topic "$r.grad:4" --topic "$r.model:4" --topic "$r.bcast:4"
		--topic "$r.inject:1" --topic "$r.ctl:1")
done
"$SCADLES" broker "${targs[@]}" --bootstrap-file "$tmp/bootstrap" \
	>"$tmp/broker.out" 2>"$tmp/broker.err" &
pids="$pids $!"
for _ in $(seq 1 100); do
	[ -s "$tmp/bootstrap" ] && break
	sleep 0.1
done
embedded_bs=$(cat "$tmp/bootstrap" 2>/dev/null)
if [ -s "$tmp/bootstrap" ] && [ "${ONLY:-}" = live ]; then
	run_live embedded "$embedded_bs" ee asp
	run_live embedded "$embedded_bs" ef bsp
elif [ -s "$tmp/bootstrap" ]; then
	run_job embedded "$(cat "$tmp/bootstrap")" ea 0 interval asp
	run_job embedded "$(cat "$tmp/bootstrap")" eb 0 every asp
	run_job embedded "$(cat "$tmp/bootstrap")" ec 0 auto bsp
	run_job embedded "$(cat "$tmp/bootstrap")" ed 0 auto scadles
	run_live embedded "$(cat "$tmp/bootstrap")" ee asp
	run_live embedded "$(cat "$tmp/bootstrap")" ef bsp
else
	echo "embedded: the broker did not start"
fi

bs=${SCADLES_KAFKA:-}
if [ -z "$bs" ] || [ "$bs" = unavailable ]; then
	bs=""
	if st=$("$here/../scripts/kafka.sh" status 2>/dev/null); then
		bs=$(echo "$st" | awk '{print $2}')
	elif command -v java >/dev/null && SCADLES=$SCADLES "$here/../scripts/kafka.sh" up \
		>"$tmp/kafka.out" 2>&1; then
		kafka_started=1
		st=$("$here/../scripts/kafka.sh" status 2>/dev/null) && bs=$(echo "$st" | awk '{print $2}')
	fi
fi
if [ -n "$bs" ] && [ "${ONLY:-}" = live ]; then
	run_live kafka "$bs" "bd$$x$(date +%s)e" asp
	run_live kafka "$bs" "bd$$x$(date +%s)f" bsp
elif [ -n "$bs" ]; then
	alone=0
	run_job kafka "$bs" "bd$$x$(date +%s)a" 1 interval asp
	run_job kafka "$bs" "bd$$x$(date +%s)b" 1 every asp
	run_job kafka "$bs" "bd$$x$(date +%s)c" 1 auto bsp
	run_job kafka "$bs" "bd$$x$(date +%s)d" 1 auto scadles
	run_live kafka "$bs" "bd$$x$(date +%s)e" asp
	run_live kafka "$bs" "bd$$x$(date +%s)f" bsp
else
	echo "kafka:    skipped (no broker: set SCADLES_KAFKA or run scripts/kafka.sh up)"
fi
exit 0
