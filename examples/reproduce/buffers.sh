#!/usr/bin/env bash
# buffers.sh — truncation vs persistence buffers (claim 2, paper Table IV): peak
# samples buffered on one device over a one-hour run (3600 virtual s) for the
# rate sets S1, S2, S10, S20 with 16 devices training at 200 samples/s each
# (per_sample 0.005 s), so S2 / S20 streams outrun the devices while S1 / S10
# do not.  Persistence keeps every sample until trained on; truncation keeps
# one 1-s window.  Rows: BSP b = 64 with persistence (the conventional
# baseline), ScaDLES with persistence, ScaDLES with truncation.
#   examples/reproduce/buffers.sh      (QUICK=1 for a smoke run)
. "$(dirname "$0")/lib.sh"
TAG=buffers
HORIZON=$(q 3600 120)
SETS=$(q "S1 S2 S10 S20" "S2")
base=$REPRO_DIR/base-mlp.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for s in $SETS; do
	mkconf "$base" "$tmp/b.json" ".sim += {\"rates\": \"$s\", \"max_time\": $HORIZON,
		\"per_sample\": 0.005, \"eval_every\": 60, \"eval_samples\": 1000}"
	sim "bsp-persist-$s" "$tmp/b.json"
	mkconf "$tmp/b.json" "$tmp/p.json" '.sim.policy = "scadles" | del(.sim.batch)'
	sim "scadles-persist-$s" "$tmp/p.json"
	mkconf "$tmp/p.json" "$tmp/t.json" '.sim.buffer = "truncation"'
	sim "scadles-trunc-$s" "$tmp/t.json"
done

{
	echo "Peak samples buffered on one device, 16 devices at 200 samples/s, ${HORIZON} virtual s"
	printf '%-5s %14s %16s %14s %14s %14s %10s %10s\n' set bsp_persist scadles_persist \
		scadles_trunc ratio_vs_bsp ratio_vs_scad dropped acc_trunc
	for s in $SETS; do
		pb=$(endf "bsp-persist-$s" peak_buffered)
		ps=$(endf "scadles-persist-$s" peak_buffered)
		pt=$(endf "scadles-trunc-$s" peak_buffered)
		printf '%-5s %14s %16s %14s %14s %14s %10s %10s\n' "$s" "$pb" "$ps" "$pt" \
			"$(ratiox "$pb" "$pt")" "$(ratiox "$ps" "$pt")" "$(endf "scadles-trunc-$s" dropped)" \
			"$(endf "scadles-trunc-$s" test_acc)"
	done
	echo "ratio = persistence peak / truncation peak; dropped = samples truncation discarded (all devices)."
} | tee "$OUT/buffers.txt"

args=()
for s in $SETS; do
	for c in bsp-persist scadles-persist scadles-trunc; do
		tsv "$c-$s" buffered >"$tmp/$c-$s.tsv"
		args+=("$tmp/$c-$s.tsv|1:(\$2+1)|$c $s")
	done
done
# buffered in the metric lines is the total over all devices.
PLOT_EXTRA="set logscale y" plot "$OUT/buffers.png" "Samples buffered (all devices), log scale" "virtual time (s)" \
	"buffered samples + 1" "${args[@]}" 2>/dev/null || true
