#!/usr/bin/env bash
# adacomp.sh — AdaComp vs asynchronous SGD uplink bytes at equal accuracy
# (claim 5): the AdaComp paper's CNN (conv3x3x32 - maxpool - conv3x3x64 -
# maxpool - fc128 - fc10, 421K parameters) on Fashion-MNIST (the paper used
# MNIST), 16 asynchronous devices, batch 10, 50 samples/s of compute each,
# 10 Mbit/s uplinks, and the paper's worker loop for both (sim.async_pull:
# pull the model, compute one batch, push).  ASGD sends dense gradients;
# AdaComp sends the top 1% (c = 0.01) per tensor and the server divides by the
# per-coordinate staleness.  Bytes are whole wire messages (payload + header)
# sent by the devices until the first evaluation at which the mean of the last
# three evaluations reaches each target (and, for comparison, the first single
# evaluation at or above it).  Variants: adacomp (float32 values, the paper's
# message), adacomp-half (IEEE half values), adacomp-log8 (8-bit log values
# and Rice-coded index gaps).
#   examples/reproduce/adacomp.sh      (QUICK=1 for a smoke run)
. "$(dirname "$0")/lib.sh"
TAG=adacomp
TARGETS=$(q "0.70 0.75 0.78 0.80 0.82" "0.2")
# ASGD with async_pull diverges (non-finite values) at lr 0.05 and does not
# train at 0.02 (accuracy stays at chance); of 0.015, 0.01, 0.005, 0.0025 and
# 0.00125, which all train, 0.0025 reaches every target no later than the
# others, so the baseline runs at its best lr.  AdaComp diverges early at
# 0.05 in some runs (2 of 5 seeds of the float32 variant, seed 1 of the
# Rice-coded one); 0.03 trains in every variant and seed tried and reaches the
# targets sooner than 0.02.
ASGD_LR=${ASGD_LR:-0.0025}
ADA_LR=${ADA_LR:-0.03}
VARIANTS="adacomp adacomp-half adacomp-log8"
base=$REPRO_DIR/base-cnn.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkconf "$base" "$tmp/a.json" ".optim.lr = $ASGD_LR | .sim += {\"max_time\": $(q 400 20),
	\"eval_every\": 5, \"async_pull\": true}"
sim asgd "$tmp/a.json"
mkconf "$base" "$tmp/c.json" ".optim.lr = $ADA_LR | .sim += {\"policy\": \"adacomp\",
	\"codec\": \"adacomp\", \"codec_ratio\": 0.01, \"max_time\": $(q 150 10), \"eval_every\": 5,
	\"async_pull\": true}"
sim adacomp "$tmp/c.json"
mkconf "$tmp/c.json" "$tmp/h.json" '.sim.codec_half = true'
sim adacomp-half "$tmp/h.json"
mkconf "$tmp/c.json" "$tmp/l.json" '.sim.codec_log8 = true | .sim.codec_rice = true'
sim adacomp-log8 "$tmp/l.json"

# at3 NAME KEY ACC: KEY of the first metric line at which the mean test
# accuracy of it and the two evaluations before reaches ACC ("-" if never).
at3() {
	jq -rs --argjson a "$3" --arg k "$2" '[.[] | select(.event == null)] as $l |
		[range(2; $l | length) | select(($l[. - 2].test_acc + $l[. - 1].test_acc +
		$l[.].test_acc) / 3 >= $a) | $l[.][$k]] | if length > 0 then .[0] else "-" end' \
		"$OUT/$TAG/$1.jsonl"
}
# msg NAME: bytes sent per update applied (messages still in flight at the
# end count in the bytes only).
msg() { awk -v b="$(endf "$1" bytes_up)" -v u="$(endf "$1" updates)" \
	'BEGIN { printf "%.0f\n", (u > 0 ? b / u : 0) }'; }

{
	echo "AdaComp (c = 0.01, lr $ADA_LR) vs ASGD (dense, lr $ASGD_LR), CNN, 16 devices, batch 10," \
		"pull - compute - push"
	printf '%-7s %-13s %6s %13s %6s %12s %9s %8s %9s\n' target variant t_asgd bytes_asgd \
		t_ada bytes_ada reduction upd_ratio red_1eval
	for a in $TARGETS; do
		ba=$(at3 asgd bytes_up "$a")
		for v in $VARIANTS; do
			bc=$(at3 "$v" bytes_up "$a")
			printf '%-7s %-13s %6s %13s %6s %12s %9s %8s %9s\n' "$a" "$v" \
				"$(at3 asgd t "$a")" "$ba" "$(at3 "$v" t "$a")" "$bc" "$(ratiox "$ba" "$bc")" \
				"$(ratio "$(at3 asgd updates "$a")" "$(at3 "$v" updates "$a")")" \
				"$(ratiox "$(field_at asgd bytes_up "$a")" "$(field_at "$v" bytes_up "$a")")"
		done
	done
	for n in asgd $VARIANTS; do
		echo "$n: final acc $(final_acc "$n" 3) (mean of last 3 evals), $(endf "$n" updates)" \
			"updates, $(msg "$n") bytes/update, mean staleness $(endf "$n" staleness)"
	done
	echo "t, bytes, updates at the first evaluation where the mean of the last 3 (2000 test"
	echo "samples each, every 5 s) reaches the target; reduction = bytes_asgd / bytes_ada;"
	echo "upd_ratio = updates ASGD needed / updates AdaComp needed; red_1eval = the reduction"
	echo "at the first single evaluation at or above the target.  adacomp-half: IEEE half"
	echo "values (sim.codec_half); adacomp-log8: 8-bit log values + Rice-coded index gaps"
	echo "(sim.codec_log8, sim.codec_rice)."
} | tee "$OUT/adacomp.txt"

series=("$tmp/asgd.tsv|2:3|ASGD dense")
tsv asgd bytes_up test_acc >"$tmp/asgd.tsv"
for v in $VARIANTS; do
	tsv "$v" bytes_up test_acc >"$tmp/$v.tsv"
	series+=("$tmp/$v.tsv|2:3|$v")
done
PLOT_EXTRA="set logscale x" plot "$OUT/adacomp.png" "AdaComp vs ASGD: accuracy vs uplink bytes" \
	"bytes sent by the devices" "test accuracy" "${series[@]}"
