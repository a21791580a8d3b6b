#!/usr/bin/env bash
# downlink.sh — the accuracy cost of downlink compression (issue #12): bsp,
# 8 devices (S10), the Fashion-MNIST MLP in 2 shards, models reaching the
# devices as the model broadcast (sim.downlink_bcast, core/bcast.c) with
# job.downlink none (float32 deltas: exact), q8, fp16 and topk (ratio 0.1,
# half values), keyframes every 50 versions; SEEDS (default 1-5; train.seed:
# the initial model, the rates, the data order), evaluations every EVAL (2)
# virtual s. Two downlinks: 100 Mbit/s (the
# simulator's default: the rounds wait for data, not for the model, so the
# codecs run the same rounds and differ in accuracy only) and 800 kbit/s
# (a float32 model takes seconds: smaller deltas also buy rounds). Prints
# time to TARGET test accuracy, final accuracy (mean of the last 3 metric
# lines), server steps and MB down per device: median [min, max] over the
# seeds.
#   examples/reproduce/downlink.sh      (QUICK=1 for a smoke run)
#   SEEDS="1 2 3" JOBS=2 examples/reproduce/downlink.sh
. "$(dirname "$0")/lib.sh"
TAG=downlink
TARGET=${TARGET:-0.80}
HORIZON=$(q 300 40)
SEEDS=${SEEDS:-$(q "1 2 3 4 5" "1")}
EVAL=${EVAL:-2}
CODECS="none q8 fp16 topk"
LINKS="12500000 100000" # bytes/s: 100 Mbit/s, 800 kbit/s
base=$REPRO_DIR/base-mlp.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for bw in $LINKS; do
	for c in $CODECS; do
		for s in $SEEDS; do
			mkconf "$base" "$tmp/$c-$bw-s$s.json" ".train.seed = $s |
				.job = {downlink: {name: \"$c\"}} |
				.sim += {devices: 8, shards: 2, batch: 32, downlink_bcast: true,
				         down_bps: $bw, max_time: $HORIZON, eval_every: $EVAL}"
			sim_bg "$c-$bw-s$s" "$tmp/$c-$bw-s$s.json"
		done
	done
done
sim_wait

{
	echo "Downlink codecs, bsp, 8 devices (S10), 2 shards, ${HORIZON} virtual s, target $TARGET," \
		"seeds $SEEDS"
	printf '%-8s %-6s %-20s %-26s %-16s %s\n' down downlink t_target_s final_acc steps \
		MB_down_per_device
	for bw in $LINKS; do
		for c in $CODECS; do
			t=() a=() st=() mb=()
			for s in $SEEDS; do
				n=$c-$bw-s$s
				t+=("$(t_acc "$n" "$TARGET")")
				a+=("$(final_acc "$n")")
				st+=("$(endf "$n" step)")
				mb+=("$(endf "$n" bytes_down | awk '{ printf "%.1f", $1 / 8 / 1e6 }')")
			done
			printf '%-8s %-6s %-20s %-26s %-16s %s\n' "$(awk -v b="$bw" \
				'BEGIN { printf "%gM", b * 8 / 1e6 }')" "$c" "$(med_range "${t[@]}")" \
				"$(med_range "${a[@]}")" "$(med_range "${st[@]}")" \
				"$(med_range "${mb[@]}" | cut -d' ' -f1)"
		done
	done
	echo "down = downlink bandwidth, bit/s; median [min, max] over the seeds; - = not reached" \
		"in ${HORIZON} s; MB: median; test evaluations every $EVAL virtual s."
} | tee "$OUT/downlink.txt"
record "$TAG" "SEEDS=\"$SEEDS\" examples/reproduce/downlink.sh"
