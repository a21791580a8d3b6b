#!/usr/bin/env bash
# Bounded fuzzing: for each target, replays fuzz/regress/<target>/ (inputs
# that once failed) and then fuzzes for FUZZ_SECONDS from the seeds, the
# regression inputs and the corpus grown by earlier runs
# ($FUZZ_BUILD/corpus/<target>/). Fails on any crash, leak, timeout
# (FUZZ_TIMEOUT seconds for one input; FUZZ_TIMEOUT_<target without fuzz_>
# overrides it for one target) or failed property; the failing input
# is left in $FUZZ_BUILD/artifacts/ to be added to fuzz/regress/<target>/.
# Prints the executions and corpus size per target. FUZZ_SEED, when set, fixes
# libFuzzer's random seed. FUZZ_JOBS (default 1) targets run at once, each
# on one core; their lines are printed in the targets' order.
# Usage: fuzz/run.sh build-fuzz/fuzz_wire ...
set -uo pipefail
build=${FUZZ_BUILD:-build-fuzz}
seconds=${FUZZ_SECONDS:-60}
default_timeout=${FUZZ_TIMEOUT:-10}
jobs=${FUZZ_JOBS:-1}
case $jobs in '' | *[!0-9]*) jobs=0 ;; *) jobs=$((10#$jobs)) ;; esac
[ "$jobs" -ge 1 ] || { echo "fuzz: FUZZ_JOBS must be a positive integer, not '${FUZZ_JOBS:-}'" >&2; exit 2; }
# A stopped run stops its fuzzers too.
trap 'kill $(jobs -p) 2>/dev/null' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$build/artifacts"
# fuzz_one BIN: replays and fuzzes one target; 1 if it failed.
fuzz_one() {
	local bin=$1 name regress corpus log tvar timeout dirs execs rate
	name=$(basename "$bin")
	regress=fuzz/regress/$name
	corpus=$build/corpus/$name
	log=$build/$name.log
	tvar=FUZZ_TIMEOUT_${name#fuzz_}
	timeout=${!tvar:-$default_timeout}
	mkdir -p "$corpus"
	if compgen -G "$regress/*" >/dev/null; then
		if ! "$bin" -timeout="$timeout" -rss_limit_mb=2048 "$regress"/* >"$log.replay" 2>&1; then
			echo "fuzz: $name: a regression input fails again (log: $log.replay)" >&2
			tail -n 30 "$log.replay" >&2
			return 1
		fi
	fi
	dirs=("$corpus" "$build/seeds/$name")
	[ -d "$regress" ] && dirs+=("$regress")
	if "$bin" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048 ${FUZZ_SEED:+-seed="$FUZZ_SEED"} \
		-print_final_stats=1 -artifact_prefix="$build/artifacts/$name-" "${dirs[@]}" >"$log" 2>&1; then
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
		echo "fuzz: $name: ok, $execs executions in ${seconds}s ($rate/s), corpus" \
			"$(find "$corpus" -type f | wc -l) files / $(du -sb "$corpus" | cut -f1) bytes," \
			"seeds $(find "$build/seeds/$name" -type f | wc -l)"
	else
		echo "fuzz: $name: FAILED (log: $log); add the input named below to $regress/" >&2
		grep -E 'ERROR|SUMMARY|fuzz property|Test unit written|timeout' "$log" | head -n 20 >&2
		return 1
	fi
}
names=()
for bin in "$@"; do
	name=$(basename "$bin")
	rm -f "$build/$name.rc"
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n
	done
	{ fuzz_one "$bin" >"$build/$name.result" 2>&1 && echo ok >"$build/$name.rc"; } &
	names+=("$name")
done
wait
failed=()
for name in "${names[@]}"; do
	cat "$build/$name.result"
	[ "$(cat "$build/$name.rc" 2>/dev/null)" = ok ] || failed+=("$name")
done
if [ ${#failed[@]} -ne 0 ]; then
	echo "fuzz: failed: ${failed[*]}" >&2
	exit 1
fi
