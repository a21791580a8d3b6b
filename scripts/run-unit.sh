#!/usr/bin/env bash
# Runs each cmocka unit-test driver given as an argument; prints a summary
# line and exits non-zero if any driver failed.
set -u
pass=0; fail=0; failed=()
for t in "$@"; do
	if "$t"; then pass=$((pass + 1)); else fail=$((fail + 1)); failed+=("$(basename "$t")"); fi
done
echo
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ] || { echo "failed drivers: ${failed[*]}"; exit 1; }
