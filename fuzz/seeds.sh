#!/usr/bin/env bash
# Writes each fuzz target's seed corpus into $FUZZ_BUILD/seeds/<target>/ with
# the library's own encoders (the target run with SC_FUZZ_SEEDS=DIR); the
# configuration target also gets the repository's example configurations.
# Usage: fuzz/seeds.sh build-fuzz/fuzz_wire ...
set -euo pipefail
build=${FUZZ_BUILD:-build-fuzz}
for bin in "$@"; do
	name=$(basename "$bin")
	dir=$build/seeds/$name
	rm -rf "$dir"
	mkdir -p "$dir"
	SC_FUZZ_SEEDS=$dir "$bin"
	if [ "$name" = fuzz_conf ]; then
		i=0
		for f in examples/*.json examples/*/*.json tests/data/config/valid/*.json; do
			[ -f "$f" ] && cp "$f" "$dir/example-$((i++))"
		done
	fi
	echo "fuzz seeds: $name: $(find "$dir" -type f | wc -l) files, $(du -sb "$dir" | cut -f1) bytes"
done
