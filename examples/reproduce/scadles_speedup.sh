#!/usr/bin/env bash
# scadles_speedup.sh — ScaDLES vs conventional BSP (claim 1): for the stream-rate
# sets S1, S2, S10, S20 (16 devices, Fashion-MNIST MLP), virtual time to a
# target test accuracy and the final accuracy of BSP (b = 64 per device, equal
# weights, persistence), weighted aggregation alone (rate-proportional batches,
# r_i = b_i / sum b_j, linear LR scaling, persistence) and full ScaDLES
# (+ truncation + adaptive Top-k CR 0.1, delta 0.3). ScaDLES runs twice: with
# the fixed 1-s window (b_i = clamp(S_i * 1 s, 8, 1024)) and with the auto window
# w = B / sum_j S_j (B = 64 * 16, the LR-scaling reference), which makes the
# global batch B whatever the rate set.
#   examples/reproduce/scadles_speedup.sh      (QUICK=1 for a smoke run)
#   SETS="S2 S20" HORIZON=150 EVAL=2 OUT=... examples/reproduce/scadles_speedup.sh
#     (a subset, a shorter horizon, test evaluations every EVAL virtual s)
. "$(dirname "$0")/lib.sh"
TAG=scadles
TARGET=${TARGET:-0.84}
# S1's slowest streams are clamped to 1 sample/s: BSP makes 9 steps in 600 s and
# never reaches 0.84, so S1 uses the highest accuracy it does reach.
TARGET_S1=${TARGET_S1:-0.73}
HORIZON=${HORIZON:-$(q 600 40)}
SETS=${SETS:-$(q "S1 S2 S10 S20" "S10")}
EVAL=${EVAL:-10}
base=$REPRO_DIR/base-mlp.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for s in $SETS; do
	mkconf "$base" "$tmp/c.json" \
		".sim.rates = \"$s\" | .sim.max_time = $HORIZON | .sim.eval_every = $EVAL"
	sim "bsp-$s" "$tmp/c.json"
	mkconf "$tmp/c.json" "$tmp/w.json" '.sim.policy = "scadles" | del(.sim.batch)'
	sim "weighted-$s" "$tmp/w.json"
	mkconf "$tmp/w.json" "$tmp/f.json" \
		'.sim += {"buffer": "truncation", "codec": "adaptive", "codec_ratio": 0.1, "codec_delta": 0.3}'
	sim "full-$s" "$tmp/f.json"
	mkconf "$tmp/w.json" "$tmp/wa.json" '.sim.window = "auto"'
	sim "weighted-auto-$s" "$tmp/wa.json"
	mkconf "$tmp/f.json" "$tmp/fa.json" '.sim.window = "auto"'
	sim "full-auto-$s" "$tmp/fa.json"
done
CONFIGS="bsp weighted full weighted-auto full-auto"

# t_stays NAME ACC: first evaluation time after which the test accuracy is never
# below ACC again up to the horizon ("-" if the last evaluation is below ACC).
t_stays() {
	jq -rs --argjson a "$2" '[.[] | select(.event == null)] as $l |
		([$l[] | select(.test_acc < $a) | .t] | max // -1) as $b |
		[$l[] | select(.t > $b) | .t] | if length > 0 then .[0] else "-" end' "$OUT/$TAG/$1.jsonl"
}

tab=$OUT/scadles.txt
{
	echo "ScaDLES vs BSP, 16 devices, Fashion-MNIST MLP, target test accuracy $TARGET" \
		"(S1: $TARGET_S1), horizon ${HORIZON} s"
	printf '%-5s %-13s %6s %8s %7s %7s %8s %9s %9s %6s %7s %12s %6s\n' set config window \
		t_target speedup t_stays sp_stays final_acc acc_diff steps batch bytes_up cnc
	for s in $SETS; do
		tg=$TARGET
		[ "$s" = S1 ] && tg=$TARGET_S1
		tb=$(t_acc "bsp-$s" "$tg")
		sb=$(t_stays "bsp-$s" "$tg")
		ab=$(final_acc "bsp-$s")
		for c in $CONFIGS; do
			n=$c-$s
			t=$(t_acc "$n" "$tg")
			st=$(t_stays "$n" "$tg")
			a=$(final_acc "$n")
			win=$(endf "$n" window)
			[ "$win" = - ] || win=$(printf "%.2f" "$win")
			printf '%-5s %-13s %6s %8s %7s %7s %8s %9s %+9.4f %6s %7s %12s %6s\n' "$s" "$c" \
				"$win" "$t" "$(ratio "$tb" "$t")" "$st" "$(ratio "$sb" "$st")" "$a" \
				"$(awk -v a="$a" -v b="$ab" 'BEGIN{print a-b}')" \
				"$(endf "$n" step)" "$(awk -v n="$(endf "$n" samples)" -v k="$(endf "$n" step)" \
				'BEGIN{if (k > 0) printf "%.0f", n / k; else print "-"}')" \
				"$(endf "$n" bytes_up)" "$(endf "$n" cnc)"
		done
	done
	echo "t_target: virtual s to the target (evaluated every $EVAL s on the full test set);"
	echo "speedup = t_target(bsp) / t_target; t_stays: first evaluation after which the accuracy"
	echo "stays >= the target up to the horizon, sp_stays its ratio to bsp's;"
	echo "final_acc = mean of the last 3 evaluations;"
	echo "window: ScaDLES batch window in s (auto: B / sum_j S_j, B = 64 * 16);"
	echo "batch = samples trained / steps (global batch per round; counts the round in progress)."
} | tee "$tab"

for s in $SETS; do
	for c in $CONFIGS; do tsv "$c-$s" test_acc >"$tmp/$c-$s.tsv"; done
	plot "$OUT/scadles-$s.png" "ScaDLES vs BSP, $s (16 devices)" "virtual time (s)" \
		"test accuracy" "$tmp/bsp-$s.tsv|1:2|BSP b=64" "$tmp/weighted-$s.tsv|1:2|weighted, 1 s" \
		"$tmp/full-$s.tsv|1:2|ScaDLES full, 1 s" \
		"$tmp/weighted-auto-$s.tsv|1:2|weighted, auto window" \
		"$tmp/full-auto-$s.tsv|1:2|ScaDLES full, auto window"
done
