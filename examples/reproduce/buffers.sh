#!/usr/bin/env bash
# buffers.sh — truncation vs persistence buffers (claim 2, paper Table IV): peak
# samples buffered on one device over a one-hour run (HORIZON, 3600 virtual s)
# for the rate sets S1, S2, S10, S20 with 16 devices training at 200 samples/s
# each (per_sample 0.005 s), so S2 / S20 streams outrun the devices while S1 /
# S10 do not.  Persistence keeps every sample until trained on; truncation
# keeps one 1-s window.  Rows: BSP b = 64 with persistence (the conventional
# baseline), ScaDLES with persistence, ScaDLES with truncation; each for the
# seeds of SEEDS (median [min, max] of the per-seed ratios).  The persistence
# backlog grows linearly with the horizon, so the ratios do too.
# $OUT/buffers.tsv holds every run.
#   examples/reproduce/buffers.sh      (QUICK=1 for a smoke run)
#   SETS=S2 SEEDS="1 2 3" HORIZON=600 examples/reproduce/buffers.sh
. "$(dirname "$0")/lib.sh"
TAG=${TAG:-buffers}
HORIZON=${HORIZON:-$(q 3600 120)}
SETS=${SETS:-$(q "S1 S2 S10 S20" "S2")}
SEEDS=${SEEDS:-$(q "1 2 3 4 5" "1")}
base=$REPRO_DIR/base-mlp.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for s in $SETS; do
	for seed in $SEEDS; do
		r=$s-s$seed
		mkconf "$base" "$tmp/b-$r.json" ".train.seed = $seed | .sim += {\"rates\": \"$s\",
			\"max_time\": $HORIZON, \"per_sample\": 0.005, \"eval_every\": 60,
			\"eval_samples\": 1000}"
		sim_bg "bsp-persist-$r" "$tmp/b-$r.json"
		mkconf "$tmp/b-$r.json" "$tmp/p-$r.json" '.sim.policy = "scadles" | del(.sim.batch)'
		sim_bg "scadles-persist-$r" "$tmp/p-$r.json"
		mkconf "$tmp/p-$r.json" "$tmp/t-$r.json" '.sim.buffer = "truncation"'
		sim_bg "scadles-trunc-$r" "$tmp/t-$r.json"
	done
done
sim_wait

tsv=$OUT/$TAG.tsv
printf 'set\tseed\tbsp_persist\tscadles_persist\tscadles_trunc\tratio_vs_bsp\tratio_vs_scad\tdropped\tacc_trunc\n' >"$tsv"
for s in $SETS; do
	for seed in $SEEDS; do
		pb=$(endf "bsp-persist-$s-s$seed" peak_buffered)
		ps=$(endf "scadles-persist-$s-s$seed" peak_buffered)
		pt=$(endf "scadles-trunc-$s-s$seed" peak_buffered)
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$seed" "$pb" "$ps" "$pt" \
			"$(ratio "$pb" "$pt")" "$(ratio "$ps" "$pt")" \
			"$(endf "scadles-trunc-$s-s$seed" dropped)" \
			"$(endf "scadles-trunc-$s-s$seed" test_acc)" >>"$tsv"
	done
done

{
	echo "Peak samples buffered on one device, 16 devices at 200 samples/s, ${HORIZON} virtual s," \
		"seeds $SEEDS"
	printf '%-5s %11s %15s %13s %-30s %-30s %10s %9s\n' set bsp_persist scadles_persist \
		scadles_trunc ratio_vs_bsp ratio_vs_scad dropped acc_trunc
	for s in $SETS; do
		v() { tsv_col "$tsv" "$1" set="$s"; }
		printf '%-5s %11s %15s %13s %-30s %-30s %10s %9s\n' "$s" "$(med $(v bsp_persist))" \
			"$(med $(v scadles_persist))" "$(med $(v scadles_trunc))" \
			"$(med_ratio $(v ratio_vs_bsp))" "$(med_ratio $(v ratio_vs_scad))" \
			"$(med $(v dropped))" "$(med $(v acc_trunc))"
	done
	echo "Medians over the seeds; ratio = persistence peak / truncation peak, median [min, max]"
	echo "of the per-seed ratios; dropped = samples truncation discarded (all devices)."
} | tee "$OUT/$TAG.txt"
record "$TAG" "SETS=\"$SETS\" SEEDS=\"$SEEDS\" HORIZON=$HORIZON examples/reproduce/buffers.sh"

args=()
for s in $SETS; do
	for c in bsp-persist scadles-persist scadles-trunc; do
		spread buffered $(for seed in $SEEDS; do echo "$c-$s-s$seed"; done) >"$tmp/$c-$s.tsv"
		args+=("$tmp/$c-$s.tsv|$c $s")
	done
done
# buffered in the metric lines is the total over all devices.
PLOT_EXTRA="set logscale y" plot_spread "$OUT/$TAG.png" \
	"Samples buffered (all devices), log scale; median and min-max over seeds $SEEDS" \
	"virtual time (s)" "buffered samples" "${args[@]}" 2>/dev/null || true
