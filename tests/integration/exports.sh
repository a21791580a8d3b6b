#!/usr/bin/env bash
# The shared library's exported functions are exactly the ones declared in
# the public header (plugin/include/scadles.h) plus conf_init, the
# librdkafka plugin entry point: nothing internal leaks, nothing declared is
# missing.
set -eu
BUILD=${BUILD:-build}
so="$BUILD/libscadles.so"
[ -e "$so" ] || { echo "$so not built (make BUILD=$BUILD all)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Declared: the name before '(' on every SCADLES_EXPORT declaration (the
# declaration may wrap, the name is on its first line).
grep -E '^SCADLES_EXPORT ' plugin/include/scadles.h |
	sed -E 's/\(.*//; s/.*[ *]([a-z_0-9]+)$/\1/' | sort -u >"$tmp/declared"
echo conf_init >>"$tmp/declared"
sort -u -o "$tmp/declared" "$tmp/declared"
nm -D --defined-only "$so" | awk '$2 ~ /^[TtWwi]$/ { print $3 }' | sort -u >"$tmp/exported"
nm -D --defined-only "$so" | awk '$2 !~ /^[TtWwi]$/ { print $3 }' | sort -u >"$tmp/other"
n=$(wc -l <"$tmp/declared")
[ "$n" -ge 20 ] || { echo "FAIL: only $n declarations found in scadles.h"; exit 1; }
if ! diff -u "$tmp/declared" "$tmp/exported"; then
	echo "FAIL: exported functions (+) differ from the header's declarations (-)"
	exit 1
fi
if [ -s "$tmp/other" ]; then
	echo "FAIL: exported data symbols: $(tr '\n' ' ' <"$tmp/other")"
	exit 1
fi
# Every symbol the plugin needs from librdkafka resolves.
ldd -r "$so" 2>&1 | grep -q 'undefined symbol' && { ldd -r "$so"; echo "FAIL: undefined symbols"; exit 1; }
echo "exports: ok ($n functions: $(tr '\n' ' ' <"$tmp/declared"))"
