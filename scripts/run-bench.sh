#!/usr/bin/env bash
# Runs each benchmark program given as an argument, then the comparison
# scripts in bench/*.sh. Benchmarks print figures; they do not pass or fail.
set -u
BUILD=${BUILD:-build}
export BUILD SCADLES="$PWD/$BUILD/scadles"
for b in "$@"; do
	echo "== $(basename "$b")"
	"$b" || echo "(benchmark $(basename "$b") exited $?)"
done
for s in bench/*.sh; do
	[ -e "$s" ] || continue
	echo "== $(basename "$s")"
	bash "$s" || echo "(benchmark $(basename "$s") exited $?)"
done
