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
# ABI: every exported function is bound to the version node of the
# header's major.minor (plugin/libscadles.map); the node itself is the one
# absolute symbol.
major=$(sed -n 's/^#define SCADLES_VERSION_MAJOR \([0-9]*\)$/\1/p' plugin/include/scadles.h)
minor=$(sed -n 's/^#define SCADLES_VERSION_MINOR \([0-9]*\)$/\1/p' plugin/include/scadles.h)
node="SCADLES_$major.$minor"
nm -D --defined-only --with-symbol-versions "$so" >"$tmp/nm"
awk '$2 ~ /^[TtWwi]$/ { print $3 }' "$tmp/nm" | sort -u >"$tmp/versioned"
sed 's/@.*//' "$tmp/versioned" | sort -u >"$tmp/exported"
awk '$2 !~ /^[TtWwi]$/ && !($2 == "A" && $3 ~ /^SCADLES_[0-9]+\.[0-9]+$/) { print $3 }' "$tmp/nm" |
	sort -u >"$tmp/other"
if grep -v "@@$node\$" "$tmp/versioned" >"$tmp/unversioned"; then
	echo "FAIL: exported functions not bound to the version node $node: $(tr '\n' ' ' <"$tmp/unversioned")"
	exit 1
fi
grep -qE "^[0-9a-f]+ A $node\$" "$tmp/nm" || { echo "FAIL: no version node $node in $so"; exit 1; }
# One version: the file name, the soname and scadles_version_str() agree with the header.
real=$(readlink -f "$so")
case "$real" in *"libscadles.so.$major.$minor."*) ;; *) echo "FAIL: $real: not version $major.$minor"; exit 1 ;; esac
readelf -d "$so" | grep -q "SONAME.*\[libscadles.so.$major\]" || { echo "FAIL: soname is not libscadles.so.$major"; exit 1; }
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
echo "exports: ok ($n functions, all at $node: $(tr '\n' ' ' <"$tmp/declared"))"
