#!/usr/bin/env bash
# scadles_speedup.sh — ScaDLES vs conventional BSP (claim 1): for the stream-rate
# sets S1, S2, S10, S20 (16 devices, Fashion-MNIST MLP), virtual time to a
# target test accuracy and the final accuracy of BSP (b = 64 per device, equal
# weights, persistence), weighted aggregation alone (rate-proportional batches,
# r_i = b_i / sum b_j, linear LR scaling, persistence) and full ScaDLES
# (+ truncation + adaptive Top-k CR 0.1, delta 0.3). ScaDLES runs twice: with
# the fixed 1-s window (b_i = clamp(S_i * 1 s, 8, 1024)) and with the auto window
# w = B / sum_j S_j (B = 64 * 16, the LR-scaling reference), which makes the
# global batch B whatever the rate set. Every run is repeated for each seed of
# SEEDS (train.seed: the rate draw, the data order, the initial model); the
# table gives the median and [min, max] over the seeds, the speedups are
# per-seed ratios to BSP of the same seed. $OUT/scadles.tsv holds every run.
#   examples/reproduce/scadles_speedup.sh      (QUICK=1 for a smoke run)
#   SETS="S2 S20" CONFIGS="bsp full" SEEDS="1 2" HORIZON=150 EVAL=2 OUT=... \
#     examples/reproduce/scadles_speedup.sh
#     (a subset, a shorter horizon, test evaluations every EVAL virtual s)
. "$(dirname "$0")/lib.sh"
TAG=${TAG:-scadles}
TARGET=${TARGET:-0.84}
HORIZON=${HORIZON:-$(q 600 40)}
SETS=${SETS:-$(q "S1 S2 S10 S20" "S10")}
SEEDS=${SEEDS:-$(q "1 2 3 4 5" "1")}
EVAL=${EVAL:-2}
CONFIGS=${CONFIGS:-bsp weighted full weighted-auto full-auto}
case " $CONFIGS " in *" bsp "*) ;; *) echo "scadles_speedup: CONFIGS needs bsp" >&2; exit 1 ;; esac
base=$REPRO_DIR/base-mlp.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# filter CONFIG: the jq filter from the BSP configuration to CONFIG's.
filter() {
	local w='.sim.policy = "scadles" | del(.sim.batch)'
	local f='.sim += {"buffer": "truncation", "codec": "adaptive", "codec_ratio": 0.1,
		"codec_delta": 0.3}'
	case $1 in
	bsp) echo . ;;
	weighted) echo "$w" ;;
	full) echo "$w | $f" ;;
	weighted-auto) echo "$w | .sim.window = \"auto\"" ;;
	full-auto) echo "$w | $f | .sim.window = \"auto\"" ;;
	*) echo "scadles_speedup: unknown config $1" >&2; return 1 ;;
	esac
}

for s in $SETS; do
	for seed in $SEEDS; do
		mkconf "$base" "$tmp/c.json" ".train.seed = $seed | .sim.rates = \"$s\" |
			.sim.max_time = $HORIZON | .sim.eval_every = $EVAL"
		for c in $CONFIGS; do
			mkconf "$tmp/c.json" "$tmp/$c-$s-s$seed.json" "$(filter "$c")"
			sim_bg "$c-$s-s$seed" "$tmp/$c-$s-s$seed.json"
		done
	done
done
sim_wait

# t_stays NAME ACC: first evaluation time after which the test accuracy is never
# below ACC again up to the horizon ("-" if the last evaluation is below ACC).
t_stays() {
	jq -rs --argjson a "$2" '[.[] | select(.event == null)] as $l |
		([$l[] | select(.test_acc < $a) | .t] | max // -1) as $b |
		[$l[] | select(.t > $b) | .t] | if length > 0 then .[0] else "-" end' "$OUT/$TAG/$1.jsonl"
}

# best_acc NAME: the highest test accuracy of any evaluation.
best_acc() { jq -rs '[.[] | select(.event == null) | .test_acc] | max' "$OUT/$TAG/$1.jsonl"; }

# One row per run: the common target is the lower of the best accuracies BSP
# and the configuration reach (rounded down to 0.01), so both reach it.
tsv=$OUT/$TAG.tsv
printf 'set\tconfig\tseed\twindow\tt_target\tspeedup\tt_stays\tsp_stays\tfinal_acc\tacc_diff\tcommon\tt_common\tsp_common\tsteps\tbatch\tbytes_up\tcnc\n' >"$tsv"
for s in $SETS; do
	for seed in $SEEDS; do
		b=bsp-$s-s$seed
		tb=$(t_acc "$b" "$TARGET") sb=$(t_stays "$b" "$TARGET") ab=$(final_acc "$b")
		mb=$(best_acc "$b")
		for c in $CONFIGS; do
			n=$c-$s-s$seed
			t=$(t_acc "$n" "$TARGET") st=$(t_stays "$n" "$TARGET") a=$(final_acc "$n")
			cm=$(awk -v x="$mb" -v y="$(best_acc "$n")" \
				'BEGIN { m = x < y ? x : y; printf "%.2f", int(m * 100 + 1e-9) / 100 }')
			tc=$(t_acc "$n" "$cm") tcb=$(t_acc "$b" "$cm")
			win=$(endf "$n" window)
			[ "$win" = - ] || win=$(printf "%.2f" "$win")
			st_n=$(endf "$n" step)
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
				"$s" "$c" "$seed" "$win" "$t" "$(ratio "$tb" "$t")" "$st" "$(ratio "$sb" "$st")" \
				"$a" "$(awk -v a="$a" -v b="$ab" 'BEGIN { printf "%+.4f", a - b }')" \
				"$cm" "$tc" "$(ratio "$tcb" "$tc")" "$st_n" \
				"$(awk -v n="$(endf "$n" samples)" -v k="$st_n" \
					'BEGIN { if (k > 0) printf "%.0f", n / k; else print "-" }')" \
				"$(endf "$n" bytes_up)" "$(endf "$n" cnc)" >>"$tsv"
		done
	done
done

ns=$(echo $SEEDS | wc -w)
tab=$OUT/$TAG.txt
{
	echo "ScaDLES vs BSP, 16 devices, Fashion-MNIST MLP, target test accuracy $TARGET," \
		"horizon ${HORIZON} s, evaluations every ${EVAL} s, seeds $SEEDS"
	printf '%-5s %-13s %6s %8s %-28s %7s %-28s %9s %8s %6s %-28s %6s %5s %11s %6s\n' set config \
		window t_target speedup t_stays sp_stays final_acc acc_diff common sp_common steps \
		batch bytes_up cnc
	for s in $SETS; do
		for c in $CONFIGS; do
			v() { tsv_col "$tsv" "$1" set="$s" config="$c"; }
			printf '%-5s %-13s %6s %8s %-28s %7s %-28s %9s %8s %6s %-28s %6s %5s %11s %6s\n' \
				"$s" "$c" "$(med $(v window))" "$(med $(v t_target))" \
				"$(med_ratio $(v speedup))" "$(med $(v t_stays))" "$(med_ratio $(v sp_stays))" \
				"$(med $(v final_acc))" "$(med $(v acc_diff) | awk '{ printf "%+.4f", $1 }')" \
				"$(med $(v common))" "$(med_ratio $(v sp_common))" "$(med $(v steps))" \
				"$(med $(v batch))" "$(med $(v bytes_up) | awk '{ printf "%.0f", $1 }')" \
				"$(med $(v cnc))"
		done
	done
	echo "Median over the $ns seeds; ratios: median [min, max] of the per-seed ratios to BSP of the"
	echo "same seed ((k of n): the seeds where both reached the target). t_target: virtual s to"
	echo "the target (- : not reached by half the seeds or more); speedup = t_target(bsp) / t_target;"
	echo "t_stays: first evaluation after which the accuracy stays >= the target up to the horizon,"
	echo "sp_stays its ratio to bsp's; final_acc = mean of the last 3 evaluations, acc_diff its"
	echo "difference to bsp's; common: the lower of the best accuracies of bsp and the config"
	echo "(to 0.01), sp_common the speedup to it; window: ScaDLES batch window in s (auto: B /"
	echo "sum_j S_j, B = 64 * 16); batch = samples trained / steps (counts the round in progress)."
} | tee "$tab"
record "$TAG" "SETS=\"$SETS\" CONFIGS=\"$CONFIGS\" SEEDS=\"$SEEDS\" HORIZON=$HORIZON EVAL=$EVAL TARGET=$TARGET examples/reproduce/scadles_speedup.sh"

for s in $SETS; do
	seed=${SEEDS%% *}
	args=()
	for c in $CONFIGS; do
		tsv "$c-$s-s$seed" test_acc >"$tmp/$c-$s.tsv"
		args+=("$tmp/$c-$s.tsv|1:2|$c")
	done
	plot "$OUT/$TAG-$s.png" "ScaDLES vs BSP, $s (16 devices, seed $seed)" "virtual time (s)" \
		"test accuracy" "${args[@]}"
done
