#!/usr/bin/env bash
# adacomp.sh — AdaComp vs asynchronous SGD uplink bytes at equal accuracy
# (claim 5): the AdaComp paper's CNN (conv3x3x32 - maxpool - conv3x3x64 -
# maxpool - fc128 - fc10, 421K parameters) on Fashion-MNIST (the paper used
# MNIST), 16 asynchronous devices, batch 10, 50 samples/s of compute each,
# 10 Mbit/s uplinks.  ASGD sends dense gradients; AdaComp sends the top 1%
# (c = 0.01) per tensor and the server divides by the per-coordinate
# staleness.  Bytes are whole wire messages (payload + header) sent by the
# devices until the first evaluation at or above each target accuracy.
# adacomp-half: the same with the sparse values sent as IEEE half.
#   examples/reproduce/adacomp.sh      (QUICK=1 for a smoke run)
. "$(dirname "$0")/lib.sh"
TAG=adacomp
TARGETS=$(q "0.70 0.75 0.78 0.80" "0.3")
# ASGD diverges (non-finite parameters) at lr 0.05, 0.02 and 0.01 with this
# staleness; 0.005 is the largest of those that trains.  AdaComp uses 0.05.
ASGD_LR=${ASGD_LR:-0.005}
ADA_LR=${ADA_LR:-0.05}
base=$REPRO_DIR/base-cnn.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkconf "$base" "$tmp/a.json" ".optim.lr = $ASGD_LR | .sim += {\"max_time\": $(q 400 20),
	\"eval_every\": 10}"
sim asgd "$tmp/a.json"
mkconf "$base" "$tmp/c.json" ".optim.lr = $ADA_LR | .sim += {\"policy\": \"adacomp\",
	\"codec\": \"adacomp\", \"codec_ratio\": 0.01, \"max_time\": $(q 100 5), \"eval_every\": 5}"
sim adacomp "$tmp/c.json"
mkconf "$tmp/c.json" "$tmp/h.json" '.sim.codec_half = true'
sim adacomp-half "$tmp/h.json"

{
	echo "AdaComp (c = 0.01, lr $ADA_LR) vs ASGD (dense, lr $ASGD_LR), CNN, 16 devices, batch 10"
	printf '%-8s %-13s %10s %14s %10s %14s %10s %10s\n' target variant t_asgd bytes_asgd \
		t_adacomp bytes_adacomp reduction upd_ratio
	for a in $TARGETS; do
		ba=$(field_at asgd bytes_up "$a")
		for v in adacomp adacomp-half; do
			bc=$(field_at "$v" bytes_up "$a")
			printf '%-8s %-13s %10s %14s %10s %14s %10s %10s\n' "$a" "$v" \
				"$(t_acc asgd "$a")" "$ba" "$(t_acc "$v" "$a")" "$bc" "$(ratiox "$ba" "$bc")" \
				"$(ratio "$(field_at asgd updates "$a")" "$(field_at "$v" updates "$a")")"
		done
	done
	for n in asgd adacomp adacomp-half; do
		echo "$n: final acc $(final_acc "$n" 3) (mean of last 3 evals), $(endf "$n" updates)" \
			"updates, $(endf "$n" bytes_up) bytes up, mean staleness $(endf "$n" staleness)"
	done
	echo "reduction = bytes_asgd / bytes_adacomp to the same test accuracy (2000 test samples);"
	echo "upd_ratio = updates ASGD needed / updates AdaComp needed; adacomp-half sends the"
	echo "values as IEEE half (sim.codec_half)."
} | tee "$OUT/adacomp.txt"

tsv asgd bytes_up test_acc >"$tmp/asgd.tsv"
tsv adacomp bytes_up test_acc >"$tmp/adacomp.tsv"
tsv adacomp-half bytes_up test_acc >"$tmp/adacomp-half.tsv"
PLOT_EXTRA="set logscale x" plot "$OUT/adacomp.png" "AdaComp vs ASGD: accuracy vs uplink bytes" \
	"bytes sent by the devices" "test accuracy" "$tmp/asgd.tsv|2:3|ASGD dense" \
	"$tmp/adacomp.tsv|2:3|AdaComp c=0.01" "$tmp/adacomp-half.tsv|2:3|AdaComp c=0.01, fp16 values"
