#!/usr/bin/env bash
# bench/soak.sh — a long run with crashes, on Apache Kafka (run by hand, not
# in CI; `make soak`). For SOAK_MINUTES (20) two feeds run without pause:
#
#   - a distributed job: 4 workers and 2 aggregators (examples/job.json: the
#     scadles policy, 2 shards here) on 8 Fashion-MNIST topics fed at
#     SOAK_RATE samples/s each (default 40: 320/s in all);
#   - a standalone worker (examples/worker-fmnist.json with a checkpoint every
#     2 s, and the job example's session.timeout.ms 6000: a restarted
#     consumer gets partitions only once the killed one's session expired)
#     on 2 topics of its own at the same rate per topic.
#
# Every SOAK_EVERY seconds (120) one job process is killed with SIGKILL, in
# turn worker 0, aggregator 0, worker 1, aggregator 1, worker 2, worker 3,
# ..., and started again at once; half-way the broker is killed (SIGKILL)
# and started again instead. The standalone worker is killed with SIGKILL and
# restarted every second period, a period after the job's kills. Before each
# kill the job's model is pulled (`scadles model pull`) and it and the
# standalone worker's checkpoint are scored on Fashion-MNIST's test set.
#
# At the end the feeds stop, every process drains and exits on its own
# (idle exit), and the script prints, as a Markdown block:
#   - accuracy over time (job and standalone);
#   - records fed against records trained: the job's are the samples behind
#     the distinct updates on J.grad (`agg_selftest ledger`), each update
#     once; the standalone worker's are the samples its surviving model holds
#     (its summary's samples_total);
#   - updates lost: seqs missing on J.grad below a worker's highest, and
#     updates above the seq each shard's final model says it applied;
#   - each process's resident memory a minute after it started and at its
#     end (kill or exit), and the growth for those that ran 8 minutes or more;
#     for a worker also the sample rows its stream buffers held then and the
#     partitions it held (the gauges scadles_stream_row_bytes and
#     scadles_assigned_partitions of its metrics endpoint, which every
#     process serves on a port of its own here), and the growth of the rest;
#     for every process the heap its code holds (scadles_heap_bytes in_use:
#     blocks allocated and not freed, over every thread) at the same
#     moments, and its growth; and its anonymous resident memory (RssAnon:
#     what is not pages of files), whose growth a leak would show, while
#     the libraries' pages are read in as code paths run for the first
#     time (a copy of each process's /proc/PID/smaps a minute in and when
#     last seen is kept in $SOAK_OUT/smaps/ to tell mappings apart); and
#     the resident memory half-way through the run and the growth over
#     the run's second half (every sample, 5 s apart and 1 s apart while
#     the processes drain, is kept in $SOAK_OUT/rss/; a run that exits at
#     the end is timed until every process has exited);
#   - the round latency (an update's send to its visibility in the model
#     the worker reads) p50/p99 of the workers' last runs.
#
# The block goes to stdout and to $SOAK_OUT/soak.md, and with SOAK_DOC=FILE
# (`make soak`: docs/SOAK.md) replaces the block between FILE's
# "<!-- generated: soak -->" and "<!-- end generated -->". Needs java for
# the broker (scripts/kafka.sh), jq, and a build (`make`). Exit 1 when a
# process exited non-zero at the end.
#
# Environment: SOAK_MINUTES (20), SOAK_EVERY (120), SOAK_RATE (40),
# SOAK_OUT ($BUILD/soak), SOAK_DOC, BUILD (build), KAFKA_PORT (19092: a
# broker already running there is used and kept; else one is started and
# stopped).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
SCADLES=${SCADLES:-$BUILD/scadles}
# The job is authenticated (the default): a key for this run.
SCADLES_JOB_KEY=${SCADLES_JOB_KEY:-$("$SCADLES" keygen)}
export SCADLES_JOB_KEY
SELFTEST=${AGG_SELFTEST:-$BUILD/tools/agg_selftest}
MINUTES=${SOAK_MINUTES:-20}
EVERY=${SOAK_EVERY:-120}
RATE=${SOAK_RATE:-40}
OUT=${SOAK_OUT:-$BUILD/soak}
export KAFKA_PORT=${KAFKA_PORT:-19092}
kafka() { "$ROOT/scripts/kafka.sh" "$@"; }

die() {
	echo "soak: $*" >&2
	exit 1
}
for t in "$SCADLES" "$SELFTEST"; do
	[ -x "$t" ] || die "$t is missing: run make first"
done
for t in jq curl; do command -v "$t" >/dev/null || die "$t is missing"; done
[ -e /usr/share/datasets/fashion-mnist ] || die "Fashion-MNIST is not installed (make deps)"

rm -rf "$OUT"
mkdir -p "$OUT"
started_kafka=0
if ! kafka status >/dev/null 2>&1; then
	kafka up >"$OUT/kafka-up.log" 2>&1 || {
		cat "$OUT/kafka-up.log"
		die "scripts/kafka.sh up failed"
	}
	started_kafka=1
fi
bs=$(kafka status | awk '{print $2}')
run="soak$(date +%s)"
pids=""
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	[ "$started_kafka" = 0 ] || kafka down >/dev/null 2>&1
}
trap cleanup EXIT
now() { date +%s; }
t0=$(now)
el() { echo $(($(now) - t0)); }
log() { echo "[$(printf '%5d' "$(el)") s] $*" >&2; }

# ---- configurations ----
jq --arg r "$run" '
  .job.name = $r | .job.workers = 4 | .job.shards = 2
  | .source.group_id = $r + "-w" | .source.pattern = "^" + $r + "\\.j\\..*"
  | .train.checkpoint = "" | .worker.idle_exit = 30 | .worker.progress_interval = 10
  | .job.progress_interval = 10 | .metrics.listen = "127.0.0.1:0"' "$ROOT/examples/job.json" >"$OUT/job.json"
jq --arg r "$run" --arg c "$OUT/standalone.ckpt" '
  .source.group_id = $r + "-s" | .source.pattern = "^" + $r + "\\.s\\..*"
  | .train.checkpoint = $c | .train.checkpoint_interval = 2
  | .worker.idle_exit = 30 | .worker.progress_interval = 10 | .worker.eval_interval = 0
  | .metrics.listen = "127.0.0.1:0"
  | del(.kafka["bootstrap.servers"])
  | .kafka["session.timeout.ms"] = 6000 | .kafka["heartbeat.interval.ms"] = 500' \
	"$ROOT/examples/worker-fmnist.json" >"$OUT/standalone.json"

# ---- processes: NAME -> pid, start time, incarnation ----
declare -A PID START INC
# kB resident, or nothing for a process that is gone (or a zombie).
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null; }
# kB of it that are anonymous (not pages of files such as the libraries':
# those are read in the first time a code path runs, and are no leak).
anon() { awk '/^RssAnon/ {print $2}' "/proc/$1/status" 2>/dev/null; }
declare -A RSS1 LAST # NAME.INC -> kB a minute in; NAME -> kB when last seen
declare -A ROWS1 RLAST PART1 PLAST # the same for a worker's rows and partitions
declare -A HEAP1 HLAST                # and for every process's heap in use
declare -A ANON1 ALAST                # and its anonymous resident memory
mkdir -p "$OUT/smaps" # each process's mappings a minute in and when last seen
mkdir -p "$OUT/rss"   # each run's resident memory at every sample: "s-since-start kB anon-kB"
RSS_LINES=()
# probe NAME: "kB partitions heap-kB" from its metrics endpoint (the
# address it logged): the sample rows a worker's buffers hold now and the
# partitions assigned to it ("- -" for an aggregator), and the heap its
# code holds; nothing when it cannot be read.
probe() {
	local url
	url=$(grep -o 'metrics on http://[^ ]*/metrics' "$OUT/$1.${INC[$1]}.err" 2>/dev/null | tail -n 1)
	[ -n "$url" ] || return
	curl -s --max-time 2 "${url#metrics on }" | awk '
		/^scadles_stream_row_bytes[{ ]/ {s += $NF; n++}
		/^scadles_assigned_partitions[{ ]/ {p = $NF}
		/^scadles_heap_bytes\{state="in_use"\} / {h = $NF}
		END {
			if (n && p != "") printf "%d %d ", s / 1024, p; else printf "- - "
			if (h != "") printf "%d", h / 1024; else printf "-"
		}'
}
# held KB PARTS: "MiB / partitions", or "-"
# mib KB: MiB with a decimal, or "-"
mib() { [ -n "$1" ] && awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}' || echo "-"; }
held() { [ -n "$1" ] && awk -v k="$1" -v p="$2" 'BEGIN {printf "%.1f / %d", k / 1024, p}' || echo "-"; }
start() { # start NAME
	local n=$1 i o
	i=$((${INC[$1]:-0} + 1))
	INC[$n]=$i
	o="$OUT/$n.$i"
	case $n in
	w*) "$SCADLES" worker -c "$OUT/job.json" -b "$bs" --id "${n#w}" >"$o.out" 2>"$o.err" & ;;
	a*) "$SCADLES" aggregator -c "$OUT/job.json" -b "$bs" --idle-exit 45 >"$o.out" 2>"$o.err" & ;;
	s) "$SCADLES" worker -c "$OUT/standalone.json" -b "$bs" >"$o.out" 2>"$o.err" & ;;
	esac
	PID[$n]=$!
	START[$n]=$(now)
	LAST[$n]=0
	RLAST[$n]=""
	PLAST[$n]=""
	HLAST[$n]=""
	ALAST[$n]=""
	pids="$pids $!"
}
# end NAME KB REASON: one line of the memory table (with a worker's rows
# at 1 min and at the end, and the growth of what is not rows).
ended() {
	local n=$1 kb=$2 why=$3 i life a g="-" ra rb gr="-" ha hb gh="-" aa ab ga="-" h="-" g2="-"
	i=${INC[$n]}
	life=$(($(now) - START[$n]))
	a=${RSS1[$n.$i]:-0}
	ra=${ROWS1[$n.$i]:-} rb=${RLAST[$n]:-}
	ha=${HEAP1[$n.$i]:-} hb=${HLAST[$n]:-}
	aa=${ANON1[$n.$i]:-} ab=${ALAST[$n]:-}
	if [ "$life" -ge 480 ] && [ "$a" -gt 0 ]; then
		g=$(awk -v a="$a" -v b="$kb" 'BEGIN {printf "%+.1f%%", (b - a) * 100 / a}')
		[ -z "$ra" ] || [ -z "$rb" ] ||
			gr=$(awk -v a="$((a - ra))" -v b="$((kb - rb))" 'BEGIN {printf "%+.1f%%", (b - a) * 100 / a}')
		[ -z "$ha" ] || [ -z "$hb" ] ||
			gh=$(awk -v a="$ha" -v b="$hb" 'BEGIN {printf "%+.1f MiB", (b - a) / 1024}')
		[ -z "$aa" ] || [ -z "$ab" ] ||
			ga=$(awk -v a="$aa" -v b="$ab" 'BEGIN {printf "%+.1f%%", (b - a) * 100 / a}')
		# half-way through the run: the first sample at or past it
		h=$(awk -v m="$((life / 2))" '$1 >= m {print $2; exit}' "$OUT/rss/$n.$i.tsv" 2>/dev/null)
		if [ -n "$h" ]; then
			g2=$(awk -v a="$h" -v b="$kb" 'BEGIN {printf "%+.1f%%", (b - a) * 100 / a}')
			h=$((h / 1024))
		else
			h="-"
		fi
	fi
	RSS_LINES+=("| $n #$i | $why | $life | $((a / 1024)) | $((kb / 1024)) | $g | $(held "$ra" "${PART1[$n.$i]:-}") | $(held "$rb" "${PLAST[$n]}") | $gr | $(mib "$ha") / $(mib "$hb") | $gh | $ga | $h | $g2 |")
}
sample_rss() { # every live process's size, and the minute-in one of those that reached it
	local n kb rb pa hp an
	for n in "${!PID[@]}"; do
		kb=$(rss "${PID[$n]}")
		[ -n "$kb" ] || continue
		an=$(anon "${PID[$n]}")
		cp "/proc/${PID[$n]}/smaps" "$OUT/smaps/$n.${INC[$n]}.last" 2>/dev/null
		rb="" pa="" hp=""
		read -r rb pa hp < <(probe "$n")
		[ "$rb" != - ] || rb=""
		[ "$hp" != - ] || hp=""
		LAST[$n]=$kb
		[ -z "$rb" ] || { RLAST[$n]=$rb; PLAST[$n]=$pa; }
		[ -z "$hp" ] || HLAST[$n]=$hp
		[ -z "$an" ] || ALAST[$n]=$an
		echo "$(($(now) - START[$n])) $kb ${an:--}" >>"$OUT/rss/$n.${INC[$n]}.tsv"
		if [ -z "${RSS1[$n.${INC[$n]}]:-}" ] && [ $(($(now) - START[$n])) -ge 60 ]; then
			RSS1[$n.${INC[$n]}]=$kb
			[ -z "$rb" ] || { ROWS1[$n.${INC[$n]}]=$rb; PART1[$n.${INC[$n]}]=$pa; }
			[ -z "$hp" ] || HEAP1[$n.${INC[$n]}]=$hp
			[ -z "$an" ] || ANON1[$n.${INC[$n]}]=$an
			cp "$OUT/smaps/$n.${INC[$n]}.last" "$OUT/smaps/$n.${INC[$n]}.1min" 2>/dev/null
		fi
	done
}
crash() { # crash NAME: SIGKILL and start again
	local n=$1
	sample_rss
	kill -9 "${PID[$n]}" 2>/dev/null
	wait "${PID[$n]}" 2>/dev/null
	ended "$n" "${LAST[$n]}" "SIGKILL"
	log "killed $n (incarnation ${INC[$n]}), starting it again"
	start "$n"
}

# ---- accuracy ----
ACC_LINES=()
score() { # score LABEL
	local j="-" s="-"
	if "$SCADLES" model pull -c "$OUT/job.json" -b "$bs" -o "$OUT/job-model.ckpt" --timeout 20 \
		>/dev/null 2>"$OUT/pull.err"; then
		j=$("$SCADLES" eval -c "$OUT/job.json" -k "$OUT/job-model.ckpt" 2>/dev/null | awk '{print $3}')
	fi
	if [ -e "$OUT/standalone.ckpt" ]; then
		s=$("$SCADLES" eval -c "$OUT/standalone.json" -k "$OUT/standalone.ckpt" 2>/dev/null | awk '{print $3}')
	fi
	ACC_LINES+=("| $(el) | $1 | ${j:--} | ${s:--} |")
	log "accuracy: job ${j:--}, standalone ${s:--} ($1)"
}

# ---- the run ----
log "broker $bs, run $run, $MINUTES min, a kill every $EVERY s, $RATE samples/s per topic"
"$SELFTEST" ctl join -c "$OUT/job.json" -b "$bs" --worker 0 >"$OUT/create.out" 2>"$OUT/create.err" ||
	die "creating the job's topics failed: $(cat "$OUT/create.err")"
dur=$((MINUTES * 60))
"$SCADLES" feed -b "$bs" --prefix "$run.j" --topics 8 --rate "$RATE" --duration "$dur" --quiet \
	>"$OUT/feed-job.out" 2>"$OUT/feed-job.err" &
fj=$!
"$SCADLES" feed -b "$bs" --prefix "$run.s" --topics 2 --rate "$RATE" --duration "$dur" --seed 2 --quiet \
	>"$OUT/feed-standalone.out" 2>"$OUT/feed-standalone.err" &
fs=$!
pids="$pids $fj $fs"
for n in a0 a1; do start $n; done
sleep 2
for n in w0 w1 w2 w3 s; do start $n; done

order=(w0 a0 w1 a1 w2 w3)
k=0 period=1
half=$((dur / 2))
broker_done=0
while [ "$(el)" -lt "$dur" ]; do
	next=$((period * EVERY))
	while [ "$(el)" -lt "$next" ] && [ "$(el)" -lt "$dur" ]; do
		sleep 5
		sample_rss
	done
	[ "$(el)" -lt "$dur" ] || break
	score "before the kills of period $period"
	if [ "$broker_done" = 0 ] && [ "$(el)" -ge "$half" ]; then
		broker_done=1
		log "killing the broker (SIGKILL), starting it again in 10 s"
		kafka kill 1 >/dev/null 2>&1
		sleep 10
		kafka start 1 >"$OUT/kafka-start.log" 2>&1 || die "the broker did not start again: $(tail -n 5 "$OUT/kafka-start.log")"
		log "broker back"
	else
		crash "${order[$((k % ${#order[@]}))]}"
		k=$((k + 1))
	fi
	[ $((period % 2)) = 1 ] || crash s
	period=$((period + 1))
done
wait "$fj" || log "the job's feed exited $?"
wait "$fs" || log "the standalone feed exited $?"
log "feeds done; waiting for every process to train what is left and exit"
score "feeds done"
rc=0
while :; do # until every process is gone (a zombie has no size)
	sample_rss
	live=0
	for n in "${!PID[@]}"; do
		[ -z "$(rss "${PID[$n]}")" ] || live=1
	done
	[ "$live" = 1 ] || break
	sleep 1
done
for n in w0 w1 w2 w3 s a0 a1; do
	wait "${PID[$n]}"
	x=$?
	[ "$x" = 0 ] || {
		log "$n exited $x: $(tail -n 3 "$OUT/$n.${INC[$n]}.err")"
		rc=1
	}
	ended "$n" "${LAST[$n]}" "exit $x"
done
score "end"

# ---- accounting ----
# "feed: total topics N sent S delivered D failed F ..."
fed_job=$(awk '/^feed: total/ {print $8}' "$OUT/feed-job.out")
fed_s=$(awk '/^feed: total/ {print $8}' "$OUT/feed-standalone.out")
"$SELFTEST" ledger -c "$OUT/job.json" -b "$bs" >"$OUT/ledger.out" 2>"$OUT/ledger.err" ||
	die "ledger: $(cat "$OUT/ledger.err")"
led() { sed 's/^ledger: //' "$OUT/ledger.out" | jq -s "$1"; }
trained_job=$(led '.[0].samples')
lost=$(led 'map(.missing + .unapplied) | add')
repeated=$(led 'map(.repeated) | add')
updates=$(led '.[0].updates')
# summary FILE JQ: a field of a process's summary line.
summary() { grep '^summary: ' "$1" | tail -n 1 | sed 's/^summary: //' | jq -r "$2"; }
trained_s=$(summary "$OUT/s.${INC[s]}.out" .samples_total)
preq_s=$(summary "$OUT/s.${INC[s]}.out" .prequential.samples)
lat=$(for n in w0 w1 w2 w3; do summary "$OUT/$n.${INC[$n]}.out" '.job.latency_ms.visible | "\(.p50) \(.p99)"'; done)
p50=$(echo "$lat" | awk '{print $1}' | sort -n | tail -n 1)
p99=$(echo "$lat" | awk '{print $2}' | sort -n | tail -n 1)
stale=$(for n in a0 a1; do summary "$OUT/$n.${INC[$n]}.out" .stale; done | awk '{s += $1} END {print s}')
# Records read again after a revocation or a restart and skipped as
# finished (the job's model held them), over the workers' last runs.
skipped=$(for n in w0 w1 w2 w3; do summary "$OUT/$n.${INC[$n]}.out" .skipped; done | awk '{s += $1} END {print s}')

{
	echo "Soak of $MINUTES min on Kafka $(basename "$(ls -d "${KAFKA_LIB:-$ROOT/build/kafka/lib-4.1.1}" 2>/dev/null)" | sed 's/lib-//'), $("$SCADLES" --version | head -n 1); $(nproc) cores ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)); \`bench/soak.sh\` with SOAK_MINUTES=$MINUTES SOAK_EVERY=$EVERY SOAK_RATE=$RATE."
	echo
	echo "Accuracy on Fashion-MNIST's test set (job: the model pulled from J.bcast; standalone: its checkpoint):"
	echo
	echo "| s | when | job | standalone |"
	echo "|---|---|---|---|"
	printf '%s\n' "${ACC_LINES[@]}"
	echo
	echo "| accounting | job (4 workers, 2 aggregators) | standalone worker |"
	echo "|---|---|---|"
	echo "| processes killed (SIGKILL) and restarted | $k, and the broker once | $(( ${INC[s]} - 1 )) |"
	echo "| records fed | $fed_job | $fed_s |"
	echo "| records trained into the final model | $trained_job (samples of $updates distinct updates) | $trained_s (samples_total; prequential $preq_s) |"
	echo "| trained twice (trained - fed) | $((trained_job - fed_job)) | $((trained_s - fed_s)) |"
	echo "| read again, skipped as already in the model (last runs) | $skipped | $(summary "$OUT/s.${INC[s]}.out" .skipped) |"
	echo "| updates lost (missing or unapplied) | $lost | - |"
	echo "| updates on J.grad more than once (producer retries) | $repeated | - |"
	echo "| updates stale (aggregators' last runs) | $stale | - |"
	echo "| round latency p50 / p99 (ms, worst worker) | $p50 / $p99 | - |"
	echo
	echo "Resident memory (MiB) a minute after each start and at its end; growth for runs of 8 min or more. A worker's rows / partitions: the sample rows (MiB) its stream buffers held then and the partitions assigned to it (scadles_stream_row_bytes, scadles_assigned_partitions), and the growth of its memory besides the rows. Heap in use: the bytes (MiB) the process's code held allocated then, over every thread (scadles_heap_bytes{state=\"in_use\"}), and their growth. Anonymous growth: how much the resident memory that is not pages of files grew (RssAnon in /proc/PID/status: the heaps, thread stacks, OpenBLAS's buffers); the rest is the libraries' and the program's pages, read in as code runs for the first time. Half-way: the resident memory (MiB) half-way through the run, and the growth from there to the end, which a leak would show as much as the first half's, while a larger working set taken on early (a takeover's partitions) would not:"
	echo
	echo "| process | end | ran (s) | at 1 min | at end | growth | rows / partitions at 1 min | at end | growth besides rows | heap in use at 1 min / at end | heap growth | anonymous growth | half-way | growth over the second half |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${RSS_LINES[@]}" | sort
} | tee "$OUT/soak.md"
if [ -n "${SOAK_DOC:-}" ]; then
	grep -q '^<!-- generated: soak -->$' "$SOAK_DOC" || die "$SOAK_DOC has no '<!-- generated: soak -->' line"
	awk -v f="$OUT/soak.md" '
	  /^<!-- generated: soak -->$/ { print; while ((getline l < f) > 0) print l; skip = 1; next }
	  /^<!-- end generated -->$/ { skip = 0 }
	  !skip' "$SOAK_DOC" >"$SOAK_DOC.tmp" && mv "$SOAK_DOC.tmp" "$SOAK_DOC"
	log "wrote the block into $SOAK_DOC"
fi
exit $rc
