#!/usr/bin/env bash
# adacomp.sh — AdaComp vs asynchronous SGD uplink bytes at preserved accuracy
# (claim 5): the AdaComp paper's CNN (conv3x3x32 - maxpool - conv3x3x64 -
# maxpool - fc128 - fc10, 421K parameters) on Fashion-MNIST (the paper used
# MNIST), 16 asynchronous devices, batch 10, 50 samples/s of compute each,
# 10 Mbit/s uplinks, and the paper's worker loop for both (sim.async_pull:
# pull the model, compute one batch, push).  ASGD sends dense gradients;
# AdaComp sends the top c per tensor (c = 0.01, the paper's default) and the
# server divides by the per-coordinate staleness.  Bytes are whole wire
# messages (payload + header) sent by the devices.
#
# Every run trains for the same number of updates applied (STEPS, sim.max_steps;
# one update = one batch of 10 samples, so the same samples processed) and two
# metrics are measured per seed against ASGD of the same seed:
#   equal training: total bytes sent over the STEPS updates, ASGD / AdaComp,
#     next to each one's final accuracy (mean of the last FINAL_N evaluations)
#     and the difference (the paper's metric);
#   to target: bytes sent until the first evaluation at which the mean of the
#     last three evaluations reaches each target, ASGD / AdaComp (stricter).
# Variants on SEEDS: VARIANTS among adacomp (float32 values, the paper's
# message), adacomp-half (IEEE half values), adacomp-log8 (8-bit log values
# and Rice-coded index gaps).  The sweep of c (CS, float32 message) runs on
# CSEEDS.  $OUT/adacomp.tsv holds one row per run; $OUT/adacomp-summary.md the
# summary rows of docs/RESULTS.md.  The defaults (21 simulations of 4000
# updates each) took about half an hour on the shared development machine;
# STEPS is what was trimmed (the accuracy still rises slowly at 4000).
#   examples/reproduce/adacomp.sh      (QUICK=1 for a smoke run)
#   SEEDS="1 2" CSEEDS=1 CS="0.05" STEPS=4000 VARIANTS=adacomp examples/reproduce/adacomp.sh
. "$(dirname "$0")/lib.sh"
TAG=adacomp
SEEDS=${SEEDS:-$(q "1 2 3 4 5" "1")}
CSEEDS=${CSEEDS:-$(q "1 2" "1")}
CS=${CS:-$(q "0.005 0.02 0.05" "0.05")}
VARIANTS=${VARIANTS:-adacomp adacomp-log8}
STEPS=${STEPS:-$(q 4000 100)}
TARGETS=${TARGETS:-$(q "0.75 0.80 0.82" "0.15")}
# The target of the to-target summary rows.
TARGET=${TARGET:-$(q 0.82 0.15)}
FINAL_N=${FINAL_N:-5}
# ASGD with async_pull diverges (non-finite values) at lr 0.05 and does not
# train at 0.02 (accuracy stays at chance); of 0.015, 0.01, 0.005, 0.0025 and
# 0.00125, which all train, 0.0025 reaches every target no later than the
# others (one seed, an earlier binary), so the baseline runs at its best lr.
# Rechecked on this setup (seed 1, 4000 updates, mean of the last 5
# evaluations): 0.005 ends level with 0.0025 (0.827 vs 0.829), 0.00125 lower
# (0.820).
# AdaComp diverges early at 0.05 in some runs (2 of 5 seeds of the float32
# variant, seed 1 of the Rice-coded one); 0.03 trains in every variant and
# seed tried and reaches the targets sooner than 0.02.
ASGD_LR=${ASGD_LR:-0.0025}
ADA_LR=${ADA_LR:-0.03}
# Evaluations (2000 test samples) about every 180 updates for both: ASGD
# applies about 9.4 updates per virtual second (its 1.69 MB messages fill the
# uplinks), AdaComp about 44 (compute-bound).
EVAL_ASGD=${EVAL_ASGD:-$(q 20 2)}
EVAL_ADA=${EVAL_ADA:-$(q 4 0.5)}
base=$REPRO_DIR/base-cnn.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# filter VARIANT C: the jq filter from the ASGD configuration to VARIANT's.
filter() {
	local a=".optim.lr = $ADA_LR | .sim += {\"policy\": \"adacomp\", \"codec\": \"adacomp\",
		\"codec_ratio\": $2, \"eval_every\": $EVAL_ADA}"
	case $1 in
	adacomp) echo "$a" ;;
	adacomp-half) echo "$a | .sim.codec_half = true" ;;
	adacomp-log8) echo "$a | .sim.codec_log8 = true | .sim.codec_rice = true" ;;
	*) echo "adacomp: unknown variant $1" >&2; return 1 ;;
	esac
}

# c 0.01 is the main claim's c; the sweep's other values run on CSEEDS, after
# the main claim's runs.
CS_ALL=$(printf '%s\n' 0.01 $CS | awk '!seen[$1]++' | sort -g | tr '\n' ' ')
for seed in $(printf '%s\n' $SEEDS $CSEEDS | awk '!seen[$1]++'); do
	mkconf "$base" "$tmp/asgd-s$seed.json" ".train.seed = $seed | .optim.lr = $ASGD_LR |
		.sim += {\"max_time\": 1000000, \"max_steps\": $STEPS, \"eval_every\": $EVAL_ASGD,
		\"async_pull\": true}"
	sim_bg "asgd-s$seed" "$tmp/asgd-s$seed.json"
	case " $SEEDS " in *" $seed "*)
		for v in $VARIANTS; do
			mkconf "$tmp/asgd-s$seed.json" "$tmp/$v-c0.01-s$seed.json" "$(filter "$v" 0.01)"
			sim_bg "$v-c0.01-s$seed" "$tmp/$v-c0.01-s$seed.json"
		done ;;
	esac
done
for seed in $CSEEDS; do
	for c in $CS; do
		[ "$c" = 0.01 ] && continue
		mkconf "$tmp/asgd-s$seed.json" "$tmp/adacomp-c$c-s$seed.json" "$(filter adacomp "$c")"
		sim_bg "adacomp-c$c-s$seed" "$tmp/adacomp-c$c-s$seed.json"
	done
done
sim_wait

# at3 NAME KEY ACC: KEY of the first metric line at which the mean test
# accuracy of it and the two evaluations before reaches ACC ("-" if never).
at3() {
	jq -rs --argjson a "$3" --arg k "$2" '[.[] | select(.event == null)] as $l |
		[range(2; $l | length) | select(($l[. - 2].test_acc + $l[. - 1].test_acc +
		$l[.].test_acc) / 3 >= $a) | $l[.][$k]] | if length > 0 then .[0] else "-" end' \
		"$OUT/$TAG/$1.jsonl"
}
# msg NAME: bytes sent per message (bytes_up / batches computed, 10 samples
# each; those still in flight at the end count in both).
msg() { awk -v b="$(endf "$1" bytes_up)" -v n="$(endf "$1" samples)" \
	'BEGIN { printf "%.0f\n", (n > 0 ? b / (n / 10) : 0) }'; }
# diff A B: A - B with 4 decimals ("-" when either is missing).
diff4() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-") print "-";
	else printf "%+.4f\n", a - b }'; }

# One row per run; the ratios and differences are to ASGD of the same seed.
tsv=$OUT/$TAG.tsv
{
	printf 'variant\tc\tseed\tupdates\tsamples\tmsg_bytes\tbytes_up\treduction\tfinal_acc\tacc_diff\tstaleness'
	for a in $TARGETS; do printf '\tt_%s\tbytes_%s\tupdates_%s\tred_%s' "$a" "$a" "$a" "$a"; done
	echo
} >"$tsv"
row() { # row VARIANT C SEED NAME
	local n=$4 b=asgd-s$3
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$1" "$2" "$3" "$(endf "$n" updates)" \
		"$(endf "$n" samples)" "$(msg "$n")" "$(endf "$n" bytes_up)" \
		"$(ratio "$(endf "$b" bytes_up)" "$(endf "$n" bytes_up)")" "$(final_acc "$n" "$FINAL_N")" \
		"$(diff4 "$(final_acc "$n" "$FINAL_N")" "$(final_acc "$b" "$FINAL_N")")" \
		"$(endf "$n" staleness)"
	for a in $TARGETS; do
		printf '\t%s\t%s\t%s\t%s' "$(at3 "$n" t "$a")" "$(at3 "$n" bytes_up "$a")" \
			"$(at3 "$n" updates "$a")" "$(ratio "$(at3 "$b" bytes_up "$a")" "$(at3 "$n" bytes_up "$a")")"
	done
	echo
}
{
	for seed in $(printf '%s\n' $SEEDS $CSEEDS | awk '!seen[$1]++'); do
		row asgd - "$seed" "asgd-s$seed"
		case " $SEEDS " in *" $seed "*)
			for v in $VARIANTS; do row "$v" 0.01 "$seed" "$v-c0.01-s$seed"; done ;;
		esac
		case " $CSEEDS " in *" $seed "*)
			for c in $CS; do
				[ "$c" = 0.01 ] || row adacomp "$c" "$seed" "adacomp-c$c-s$seed"
			done ;;
		esac
	done
} >>"$tsv"

# The rows of the tables: variant:c, the main claim's first.
rows="asgd:- $(for v in $VARIANTS; do printf '%s:0.01 ' "$v"; done)"
for c in $CS_ALL; do
	[ "$c" = 0.01 ] && case " $VARIANTS " in *" adacomp "*) continue ;; esac
	rows="$rows adacomp:$c"
done
seeds_of() { tsv_col "$tsv" seed variant="$1" c="$2" | sort -un | tr '\n' ' ' | sed 's/ $//'; }
# int0 VALUE: VALUE rounded to an integer ("-" stays "-").
int0() { awk -v a="$1" 'BEGIN { if (a == "-") print "-"; else printf "%.0f\n", a }'; }
pct() { awk -v a="$1" 'BEGIN { if (a == "-") print "-"; else printf "%+.2f", a * 100 }'; }
ns=$(echo $SEEDS | wc -w)
{
	echo "AdaComp (lr $ADA_LR) vs ASGD (dense, lr $ASGD_LR), CNN, 16 devices, batch 10, pull -" \
		"compute - push, $STEPS updates applied (one batch of 10 samples each) per run"
	echo "Equal training (the paper's metric): total uplink bytes over the $STEPS updates"
	printf '%-13s %6s %-11s %9s %14s %-30s %9s %-26s\n' variant c seeds msg_B bytes_up \
		reduction final_acc acc_diff_points
	for r in $rows; do
		v=${r%%:*} c=${r#*:}
		col() { tsv_col "$tsv" "$1" variant="$v" c="$c"; }
		ad=$(med_range $(col acc_diff | sed 's/^+//'))
		[ "$v" = asgd ] && ad=-
		printf '%-13s %6s %-11s %9s %14s %-30s %9s %-26s\n' "$v" "$c" "$(seeds_of "$v" "$c" | tr ' ' ,)" \
			"$(int0 "$(med $(col msg_bytes))")" "$(int0 "$(med $(col bytes_up))")" \
			"$(med_ratio $(col reduction) | awk '$1 != "-" { $1 = $1 "x" } 1')" \
			"$(med $(col final_acc))" \
			"$(echo "$ad" | awk '$1 == "-" { print; next } { printf "%+.2f [%+.2f, %+.2f]\n",
				$1 * 100, substr($2, 2) * 100, $3 * 100 }')"
	done
	echo "To target (stricter): uplink bytes until the mean of the last 3 evaluations reaches it"
	printf '%-6s %-13s %6s %7s %13s %7s %12s %-30s %-20s\n' target variant c t_asgd bytes_asgd \
		t_ada bytes_ada reduction upd_ratio
	for a in $TARGETS; do
		for r in $rows; do
			v=${r%%:*} c=${r#*:}
			[ "$v" = asgd ] && continue
			col() { tsv_col "$tsv" "$1" variant="$v" c="$c"; }
			sd=$(seeds_of "$v" "$c")
			asgd_col() { for s in $sd; do tsv_col "$tsv" "$1" variant=asgd seed="$s"; done; }
			ur=()
			for s in $sd; do
				ur+=("$(ratio "$(tsv_col "$tsv" "updates_$a" variant=asgd seed="$s")" \
					"$(tsv_col "$tsv" "updates_$a" variant="$v" c="$c" seed="$s")")")
			done
			printf '%-6s %-13s %6s %7s %13s %7s %12s %-30s %-20s\n' "$a" "$v" "$c" \
				"$(med $(asgd_col "t_$a"))" "$(int0 "$(med $(asgd_col "bytes_$a"))")" \
				"$(med $(col "t_$a"))" "$(int0 "$(med $(col "bytes_$a"))")" "$(med_ratio $(col "red_$a") | awk '$1 != "-" { $1 = $1 "x" } 1')" \
				"$(med_ratio "${ur[@]}")"
		done
	done
	echo "Medians over the seeds (main claim: $ns seeds; the sweep of c: seeds $CSEEDS); ratios:"
	echo "median [min, max] of the per-seed ratios to ASGD of the same seed ((k of n): the seeds"
	echo "where both got there). msg_B = bytes sent per message; reduction = bytes ASGD /"
	echo "bytes AdaComp; final_acc = mean of the last $FINAL_N evaluations (2000 test samples, every"
	echo "$EVAL_ASGD s ASGD / $EVAL_ADA s AdaComp, about 180 updates apart), acc_diff_points = its difference"
	echo "to ASGD's in points; t, bytes at the first evaluation where the mean of the last 3 reaches"
	echo "the target (- : half the seeds or more never did); upd_ratio = updates ASGD needed / updates"
	echo "AdaComp needed.  adacomp-half: IEEE half values (sim.codec_half); adacomp-log8: 8-bit log"
	echo "values + Rice-coded index gaps (sim.codec_log8, sim.codec_rice)."
} | tee "$OUT/$TAG.txt"
record "$TAG" "SEEDS=\"$SEEDS\" CSEEDS=\"$CSEEDS\" CS=\"$CS\" VARIANTS=\"$VARIANTS\" STEPS=$STEPS TARGETS=\"$TARGETS\" TARGET=$TARGET examples/reproduce/adacomp.sh"

# Summary rows of docs/RESULTS.md: per message format at c = 0.01, both metrics.
# acc_note DIFF: whether the median final-accuracy difference to ASGD (points)
# is within ACC_TOL points below, this project's reading of the paper's
# "preserved accuracy" (the paper gives no tolerance).
ACC_TOL=${ACC_TOL:-0.5}
acc_note() {
	awk -v d="$1" -v t="$ACC_TOL" 'BEGIN { if (d == "-") exit
		if (d + 0 >= -t) printf "; accuracy preserved (median %+.2f points, tolerance %s)\n", d, t
		else printf "; **accuracy not preserved**: median %+.2f points vs ASGD (tolerance %s)\n", d, t }'
}
{
	for v in $VARIANTS; do
		col() { tsv_col "$tsv" "$1" variant="$v" c=0.01; }
		sd=$(seeds_of "$v" 0.01)
		ad=$(pct "$(med $(col acc_diff | sed 's/^+//'))")
		re=$(med_ratio $(col reduction) | awk '$1 != "-" { $1 = $1 "x" } 1')
		rt=$(med_ratio $(col "red_$TARGET") | awk '$1 != "-" { $1 = $1 "x" } 1')
		echo "| AdaComp (c = 0.01, $v) vs ASGD uplink bytes, equal training ($STEPS updates each) |" \
			"191x at equal accuracy | $re; final accuracy vs ASGD $ad points | $sd |" \
			"$(m=${re%% *}; verdict "${m%x}" 191 x)$(acc_note "$ad") |"
		echo "| AdaComp (c = 0.01, $v) vs ASGD uplink bytes, to $TARGET test accuracy (mean of 3 evaluations) |" \
			"191x at equal accuracy | $rt; final accuracy vs ASGD $ad points | $sd |" \
			"$(m=${rt%% *}; verdict "${m%x}" 191 x)$([ "$rt" = - ] || echo "; both at $TARGET there") |"
	done
} >"$OUT/$TAG-summary.md"

# All seeds' curves: one colour per method, a line per seed.
series=()
for r in $rows; do
	v=${r%%:*} c=${r#*:}
	[ "$c" = - ] || [ "$c" = 0.01 ] || continue
	for s in $SEEDS; do
		n=asgd-s$s
		[ "$v" = asgd ] || n=$v-c0.01-s$s
		tsv "$n" bytes_up test_acc
		echo
	done >"$tmp/$v.tsv"
	series+=("$tmp/$v.tsv|2:3|$v")
done
PLOT_EXTRA="set logscale x" plot "$OUT/$TAG.png" \
	"AdaComp (c = 0.01) vs ASGD: accuracy vs uplink bytes, seeds $SEEDS" \
	"bytes sent by the devices" "test accuracy" "${series[@]}"
