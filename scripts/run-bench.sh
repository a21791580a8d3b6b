#!/usr/bin/env bash
# Runs each benchmark program given as an argument, then the scripts in
# bench/*.sh but soak.sh (`make soak`) and time_to_accuracy.sh (`make
# bench-tta`). Benchmarks print figures; one that
# cannot run (a tool, the build or the data missing) exits non-zero, and
# then so does this script, after running the others.
set -u
BUILD=${BUILD:-build}
export BUILD SCADLES="$(realpath -m "$BUILD")/scadles"
# Jobs are authenticated by default (job.auth.mode "key"): one key for the run.
SCADLES_JOB_KEY=${SCADLES_JOB_KEY:-$("$SCADLES" keygen 2>/dev/null || od -An -N32 -tx1 /dev/urandom | tr -d ' \n')}
export SCADLES_JOB_KEY
failed=()
for b in "$@"; do
	echo "== $(basename "$b")"
	"$b" || { rc=$?; echo "(benchmark ${b##*/} exited $rc)"; failed+=("${b##*/}"); }
done
for s in bench/*.sh; do
	[ -e "$s" ] || continue
	[ "$s" != bench/soak.sh ] || continue # 20 minutes on Kafka: `make soak`
	[ "$s" != bench/time_to_accuracy.sh ] || continue # 30 minutes: `make bench-tta`
	echo "== $(basename "$s")"
	bash "$s" || { rc=$?; echo "(benchmark ${s##*/} exited $rc)"; failed+=("${s##*/}"); }
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "bench: ${failed[*]} did not run to the end" >&2
	exit 1
fi
