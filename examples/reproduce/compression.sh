#!/usr/bin/env bash
# compression.sh — adaptive Top-k compression (claim 4): ScaDLES (S10, 16
# devices, truncation, Fashion-MNIST MLP) with no compression and with the
# adaptive codec at CR 0.1 / 0.01 and delta 0.1 .. 0.4 (each device decides,
# as in the paper; error feedback as in the reference code): final accuracy,
# CNC (compressed steps / all steps), bytes sent by the devices.
#   examples/reproduce/compression.sh      (QUICK=1 for a smoke run)
. "$(dirname "$0")/lib.sh"
TAG=compression
TARGET=${TARGET:-0.84}
HORIZON=$(q 600 40)
CRS=$(q "0.1 0.01" "0.1")
DELTAS=$(q "0.1 0.2 0.3 0.4" "0.3")
base=$REPRO_DIR/base-mlp.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkconf "$base" "$tmp/n.json" ".sim += {\"policy\": \"scadles\", \"buffer\": \"truncation\",
	\"max_time\": $HORIZON} | del(.sim.batch)"
sim none "$tmp/n.json"
for cr in $CRS; do
	for d in $DELTAS; do
		mkconf "$tmp/n.json" "$tmp/c.json" \
			".sim += {\"codec\": \"adaptive\", \"codec_ratio\": $cr, \"codec_delta\": $d}"
		sim "cr$cr-d$d" "$tmp/c.json"
	done
done

names="none $(for cr in $CRS; do for d in $DELTAS; do printf 'cr%s-d%s ' "$cr" "$d"; done; done)"
bn=$(endf none bytes_up)
{
	echo "Adaptive Top-k, ScaDLES S10, 16 devices, ${HORIZON} virtual s, target $TARGET"
	printf '%-12s %6s %6s %10s %9s %7s %14s %10s\n' config CR delta final_acc t_target cnc \
		bytes_up reduction
	for n in $names; do
		cr=$(jq -r '.sim.codec_ratio // "-"' "$OUT/$TAG/$n.json")
		d=$(jq -r '.sim.codec_delta // "-"' "$OUT/$TAG/$n.json")
		b=$(endf "$n" bytes_up)
		printf '%-12s %6s %6s %10s %9s %7s %14s %10s\n' "$n" "$cr" "$d" "$(final_acc "$n")" \
			"$(t_acc "$n" "$TARGET")" "$(endf "$n" cnc)" "$b" "$(ratiox "$bn" "$b")"
	done
	echo "reduction = bytes_up(no compression) / bytes_up over the same horizon."
} | tee "$OUT/compression.txt"

args=()
for n in $names; do
	tsv "$n" test_acc >"$tmp/$n.tsv"
	args+=("$tmp/$n.tsv|1:2|$n")
done
plot "$OUT/compression.png" "Adaptive Top-k (ScaDLES, S10)" "virtual time (s)" "test accuracy" \
	"${args[@]}"
