#!/usr/bin/env bash
# Runs every tests/integration/*.sh with BUILD and SCADLES set. A test that
# needs a real Kafka broker skips itself (exit 77) unless SCADLES_KAFKA names
# a bootstrap address.
set -u
BUILD=${BUILD:-build}
export BUILD SCADLES="$PWD/$BUILD/scadles"
pass=0; fail=0; skip=0; failed=()
for t in tests/integration/*.sh; do
	[ -e "$t" ] || continue
	name=$(basename "$t" .sh)
	log="$BUILD/integration/$name.log"
	mkdir -p "$BUILD/integration"
	start=$(date +%s)
	bash "$t" >"$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	case $rc in
	0) pass=$((pass + 1)); echo "[ PASS ] $name (${secs}s)" ;;
	77) skip=$((skip + 1)); echo "[ SKIP ] $name: $(tail -n 1 "$log")" ;;
	*) fail=$((fail + 1)); failed+=("$name"); echo "[ FAIL ] $name (${secs}s), last lines of $log:"; tail -n 30 "$log" | sed 's/^/    /' ;;
	esac
done
echo
echo "integration: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
