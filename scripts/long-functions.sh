#!/usr/bin/env bash
# Lists the functions of the library, the runtime and the command (core/,
# connectors/, plugin/) longer than N lines (default 100), longest first:
# "lines file:line name". A function is read as a line starting its
# definition at column 0 up to the "}" at column 0 that closes it (the
# project's clang-format style).
set -eu
n=${1:-100}
cd "$(dirname "$0")/.."
for f in $(git ls-files 'core/*.c' 'connectors/*.c' 'plugin/*.c'); do
	awk -v F="$f" -v N="$n" '
		/^[a-zA-Z].*\(/ { name = $0; start = NR }
		/^\{/ { open = NR }
		/^\}/ { if (open && NR - open > N) printf "%4d %s:%d %s\n", NR - open, F, start, substr(name, 1, 70); open = 0 }
	' "$f"
done | sort -rn
