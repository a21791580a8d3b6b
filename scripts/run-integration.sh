#!/usr/bin/env bash
# Runs every tests/integration/*.sh with BUILD and SCADLES set.
#
# Tests that need a real Apache Kafka broker read its bootstrap address from
# SCADLES_KAFKA. When that is unset, this script starts one (scripts/kafka.sh
# up: single KRaft node on 127.0.0.1) and stops it at the end; set
# SCADLES_REAL_KAFKA=0 to skip those tests instead (they exit 77). KAFKA_PORT
# and KAFKA_DIR (see scripts/kafka.sh) are exported so that a test can stop
# and start that broker; when SCADLES_KAFKA is given, export them too if the
# broker is not the default one. Each test is stopped after
# SCADLES_TEST_TIMEOUT seconds (default 600) and counts as failed: a hang
# costs one test, not the run.
set -u
BUILD=${BUILD:-build}
export BUILD SCADLES="$(realpath -m "$BUILD")/scadles"
# Jobs are authenticated by default (job.auth.mode "key"): one key for the run.
SCADLES_JOB_KEY=${SCADLES_JOB_KEY:-$("$SCADLES" keygen 2>/dev/null || od -An -N32 -tx1 /dev/urandom | tr -d ' \n')}
export SCADLES_JOB_KEY
if [ -z "${SCADLES_KAFKA:-}" ] && [ "${SCADLES_REAL_KAFKA:-1}" != 0 ]; then
	# Stop the broker at the end only if this run started it.
	scripts/kafka.sh status >/dev/null 2>&1 || trap 'scripts/kafka.sh down >/dev/null 2>&1' EXIT
	if scripts/kafka.sh up; then
		SCADLES_KAFKA=$(cat "${KAFKA_DIR:-build/kafka}/bootstrap")
		# The broker's folder and port: a test may stop and start it (data kept).
		KAFKA_PORT=${SCADLES_KAFKA##*:}
		KAFKA_DIR=$(cd "${KAFKA_DIR:-build/kafka}" && pwd)
		export SCADLES_KAFKA KAFKA_PORT KAFKA_DIR
	else
		echo "integration: the real Kafka broker did not start; its tests will fail" >&2
		export SCADLES_KAFKA=unavailable
	fi
fi
pass=0; fail=0; skip=0; failed=(); failed_rc=()
for t in tests/integration/*.sh; do
	[ -e "$t" ] || continue
	name=$(basename "$t" .sh)
	log="$BUILD/integration/$name.log"
	mkdir -p "$BUILD/integration"
	start=$(date +%s)
	# timeout signals the test's whole process group: its workers, aggregators
	# and brokers stop with it (the test's EXIT trap runs on SIGTERM).
	timeout -k 30 "${SCADLES_TEST_TIMEOUT:-600}" bash "$t" >"$log" 2>&1
	rc=$?
	[ "$rc" -eq 124 ] && echo "integration: $name timed out after ${SCADLES_TEST_TIMEOUT:-600} s" >>"$log"
	[ "$rc" -eq 137 ] && echo "integration: $name killed $((${SCADLES_TEST_TIMEOUT:-600} + 30)) s after its start" >>"$log"
	secs=$(( $(date +%s) - start ))
	case $rc in
	0) pass=$((pass + 1)); echo "[ PASS ] $name (${secs}s)" ;;
	77) skip=$((skip + 1)); echo "[ SKIP ] $name: $(tail -n 1 "$log")" ;;
	*)
		fail=$((fail + 1))
		failed+=("$name")
		failed_rc+=("$rc")
		# The test's own verdict first (logs it dumps after it can be long),
		# then the log's last lines.
		echo "[ FAIL ] $name (${secs}s): $(grep -a -m 1 '^FAIL' "$log" || echo "exit $rc")"
		echo "    last lines of $log:"
		tail -n 30 "$log" | sed 's/^/    /'
		;;
	esac
done
echo
# The failures again at the end, where a CI log's tail shows them: each
# log's last lines, then a line per failed test with its verdict.
for name in ${failed[@]+"${failed[@]}"}; do
	echo "--- last lines of $BUILD/integration/$name.log"
	tail -n 20 "$BUILD/integration/$name.log" | sed 's/^/    /'
done
for i in ${failed[@]+"${!failed[@]}"}; do
	name=${failed[$i]}
	echo "[ FAIL ] $name: $(grep -a -m 1 '^FAIL' "$BUILD/integration/$name.log" || echo "exit ${failed_rc[$i]}")"
done
echo "integration: $pass passed, $fail failed, $skip skipped${failed[0]:+ (failed: ${failed[*]})}"
# Under CI everything a test needs is installed (scripts/deps.sh): a skip
# means something is missing, and fails the run.
if [ -n "${CI:-}" ] && [ "$skip" -gt 0 ]; then
	echo "integration: $skip test(s) skipped under CI" >&2
	exit 1
fi
[ "$fail" -eq 0 ]
