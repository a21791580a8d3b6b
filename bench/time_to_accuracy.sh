#!/usr/bin/env bash
# time_to_accuracy.sh — the claim a user tests first: is scadles faster than
# synchronous training on heterogeneous streams, on a real broker? The same
# job (`scadles demo`: Fashion-MNIST 784-128-10 MLP, 4 shards, top-k 25% with
# error feedback, two aggregators) with WORKERS workers on as many
# single-partition topics, so that each worker reads one topic (one device's
# stream), each fed at a rate drawn from the ScaDLES set RATE_SET (S10:
# normal, mean 64, sd 24 samples/s; the draw follows the run's seed), run
# under
#
#   bsp      every worker a fixed batch of B / WORKERS samples, one round
#            waits for every worker's batch (the slowest stream sets the pace)
#   scadles  rate-proportional batches on the auto window (b_i = S_i B /
#            sum_j S_j, worker.window "auto", with no floor: worker.b_min 1,
#            as in the paper; the demo's floor of 16 samples would make a
#            5-samples/s stream hold every round for 3 s), gradients
#            weighted by batch, the LR scaled linearly by sum_j b_j / B
#            (the paper's rule)
#   scadles-cap  the same with job.sync.lr_scale_max 1: the LR scale at
#            most 1, so no round steps with a larger LR than bsp's (rounds
#            slower than the window, and workers draining a backlog, make
#            sum_j b_j larger than B)
#
# with the same global batch B = job.sync.base_batch (32 x WORKERS), on the
# embedded broker and on Apache Kafka, RUNS seeds each (all the policies of a
# seed see the same rates). Each run stops at TARGET test accuracy (measured
# every second on the 10,000 test images) or after DURATION seconds. Prints
# per run the time to TARGET from the evaluator's start and from the job's
# first model version (the workers' start-up and group join left out), then
# the medians and the ratios bsp / scadles and bsp / scadles-cap of the
# medians.
#
# Kafka: SCADLES_KAFKA=host:port, else one scripts/kafka.sh reports running,
# else it is started (and stopped afterwards); BROKERS=embedded skips it.
# Writes $OUT/tta.txt and tta.cmd (OUT default BUILD/reproduce) for
# docs/RESULTS.md's generated block (scripts/results-md.sh).
# Usage: bench/time_to_accuracy.sh   (BUILD, RUNS=3, TARGET=0.80,
#        DURATION=300, WORKERS=8, RATE_SET=S10, BROKERS="embedded kafka",
#        POLICIES="bsp scadles scadles-cap"; bsp is required)
set -u
BUILD=${BUILD:-build}
SCADLES=${SCADLES:-$(realpath -m "$BUILD")/scadles}
RUNS=${RUNS:-3}
TARGET=${TARGET:-0.80}
DURATION=${DURATION:-300}
WORKERS=${WORKERS:-8}
RATE_SET=${RATE_SET:-S10}
BROKERS=${BROKERS:-embedded kafka}
POLICIES=${POLICIES:-bsp scadles scadles-cap}
OUT=${OUT:-$(realpath -m "$BUILD")/reproduce}
here=$(cd "$(dirname "$0")" && pwd)

case " $POLICIES " in *" bsp "*) ;; *) echo "time_to_accuracy.sh: POLICIES needs bsp" >&2; exit 1 ;; esac
for p in $POLICIES; do
	case $p in bsp | scadles | scadles-cap) ;; *) echo "time_to_accuracy.sh: unknown policy $p" >&2; exit 1 ;; esac
done
[ -x "$SCADLES" ] || { echo "time_to_accuracy.sh: $SCADLES not built (make)" >&2; exit 1; }
[ -e /usr/share/datasets/fashion-mnist ] ||
	{ echo "time_to_accuracy.sh: Fashion-MNIST not installed (scripts/deps.sh installs it)" >&2; exit 1; }
mkdir -p "$OUT"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/scadles-bench-tta.XXXXXX")
cleanup() {
	# kafka_bootstrap runs in a command substitution: it leaves a mark
	[ -e "$tmp/kafka.started" ] && "$here/../scripts/kafka.sh" down >/dev/null 2>&1
	if [ -n "${KEEP:-}" ]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# kafka_bootstrap: a running Kafka's address, or empty.
kafka_bootstrap() {
	local st
	if [ -n "${SCADLES_KAFKA:-}" ]; then
		echo "$SCADLES_KAFKA"
	elif st=$("$here/../scripts/kafka.sh" status 2>/dev/null); then
		echo "$st" | awk '{print $2}'
	elif command -v java >/dev/null &&
		SCADLES=$SCADLES "$here/../scripts/kafka.sh" up >"$tmp/kafka.out" 2>&1; then
		touch "$tmp/kafka.started"
		"$here/../scripts/kafka.sh" status 2>/dev/null | awk '{print $2}'
	fi
}

# one BROKER POLICY SEED: runs the demo once; prints "SECONDS FROM_FIRST
# FINAL_ACCURACY" ("-" for a target not reached), or "failed" when the demo
# did not run to its end (then $tmp/failed exists and the script exits 1).
one() {
	local d=$tmp/$1-$2-$3 b=() s=()
	[ "$1" = kafka ] && b=(--bootstrap "$kbs")
	case $2 in
	bsp) s=(--set job.sync.policy=bsp --set worker.batch=fixed --set "worker.b=32") ;;
	scadles) s=(--set job.sync.policy=scadles --set worker.window=auto --set worker.b_min=1) ;;
	scadles-cap) s=(--set job.sync.policy=scadles --set worker.window=auto --set worker.b_min=1
		--set job.sync.lr_scale_max=1) ;;
	esac
	"$SCADLES" demo "${b[@]}" -w "$WORKERS" -t "$WORKERS" --partitions 1 --rate-set "$RATE_SET" \
		--seed "$3" \
		-a "$TARGET" -d "$DURATION" -e 1 -o "$d" --no-plot -q "${s[@]}" >"$d.out" 2>"$d.err" || {
		echo "time_to_accuracy.sh: $1 $2 seed $3: demo exited $? (see $d.err)" >&2
		touch "$tmp/failed"
		echo "failed - -"
		return
	}
	awk '/^  target / { r = ($3 == "reached"); t = $5; f = $7; sub(/^\(/, "", f) }
	     /^  test accuracy / { a = $3 }
	     END { if (r) printf "%s %s %s\n", t, f, a; else printf "- - %s\n", (a == "" ? "-" : a) }' \
		"$d.out"
}

# median VALUE...: the median of the values, "-" (not reached) counted as
# later than any; "-" when that is where the median falls.
median() {
	printf '%s\n' "$@" | sed 's/^-$/inf/' | sort -g | awk '{ v[NR] = $1 }
	END { a = v[int((NR + 1) / 2)]; b = v[int(NR / 2) + 1]
	      if (a == "inf" || b == "inf") print "-"; else printf "%.1f\n", (a + b) / 2 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b <= 0) print "-"; else printf "%.2fx\n", a / b }'; }

{
	echo "time to test accuracy $TARGET: $WORKERS workers on $WORKERS topics at rate set $RATE_SET," \
		"global batch $((32 * WORKERS)), $RUNS seeds, at most $DURATION s per run"
	printf '%-9s %-11s %-5s %12s %18s %9s\n' broker policy seed "to target s" "after 1st model s" "final acc"
	for broker in $BROKERS; do
		if [ "$broker" = kafka ]; then
			kbs=$(kafka_bootstrap)
			[ -n "$kbs" ] || { echo "kafka     skipped: no broker (set SCADLES_KAFKA or run scripts/kafka.sh up)"; continue; }
		fi
		declare -A t=() f=()
		for seed in $(seq 1 "$RUNS"); do
			for pol in $POLICIES; do
				read -r tt ff aa < <(one "$broker" "$pol" "$seed")
				t[$pol]="${t[$pol]:-} ${tt/failed/-}"
				f[$pol]="${f[$pol]:-} $ff"
				printf '%-9s %-11s %-5s %12s %18s %9s\n' "$broker" "$pol" "$seed" "$tt" "$ff" "$aa"
			done
		done
		# shellcheck disable=SC2086
		for pol in $POLICIES; do
			printf '%-9s %-11s %-5s %12s %18s\n' "$broker" "$pol" median "$(median ${t[$pol]})" \
				"$(median ${f[$pol]})"
		done
		# shellcheck disable=SC2086
		for pol in $POLICIES; do
			[ "$pol" = bsp ] && continue
			printf '%-9s %-17s %12s %18s\n' "$broker" "bsp/$pol" \
				"$(ratio "$(median ${t[bsp]})" "$(median ${t[$pol]})")" \
				"$(ratio "$(median ${f[bsp]})" "$(median ${f[$pol]})")"
		done
		unset t f
	done
	echo "processor: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores"
} | tee "$tmp/tta.txt"
cp "$tmp/tta.txt" "$OUT/tta.txt"
{
	"$SCADLES" --version
	"$SCADLES" --version --verbose | sed -n 's/^platform: //p'
	echo "make bench-tta"
} >"$OUT/tta.cmd"
[ ! -e "$tmp/failed" ] || { echo "time_to_accuracy.sh: a run failed (KEEP=1 keeps its output)" >&2; exit 1; }
