#!/usr/bin/env bash
# compare.sh — runs simulator configurations and prints one table row each
# from the end line: virtual time to the target accuracy, final accuracy,
# bytes sent by the devices, buffered samples, blocked seconds (waiting for
# models + uplink) and steps.
#   examples/sim/compare.sh [CONFIG.json...]   (default: every example here)
set -u
here=$(cd "$(dirname "$0")" && pwd)
SCADLES=${SCADLES:-$here/../../build/scadles}
out=${OUT:-$(mktemp -d /tmp/sc_sim_compare.XXXXXX)}
mkdir -p "$out"
[ $# -gt 0 ] || set -- "$here"/*.json
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }
printf '%-24s %10s %8s %14s %12s %10s %8s\n' config t_target acc bytes_up peak_buf blocked_s steps
for cfg in "$@"; do
	name=$(basename "$cfg" .json)
	"$SCADLES" sim -c "$cfg" -o "$out/$name.jsonl" || { echo "$name: failed"; continue; }
	end=$(tail -n 1 "$out/$name.jsonl")
	w=$(echo "$end" | field wait_s)
	s=$(echo "$end" | field send_wait_s)
	printf '%-24s %10s %8s %14s %12s %10.1f %8s\n' "$name" "$(echo "$end" | field time_to_target)" \
		"$(echo "$end" | field test_acc)" "$(echo "$end" | field bytes_up)" \
		"$(echo "$end" | field peak_buffered)" "$(awk -v a="$w" -v b="$s" 'BEGIN { print a + b }')" \
		"$(echo "$end" | field step)"
done
echo "metrics: $out"
