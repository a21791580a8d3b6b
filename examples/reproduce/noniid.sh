#!/usr/bin/env bash
# noniid.sh — non-IID data and data injection (claim 3): 10 devices with one
# label each (S10 rates, Fashion-MNIST), two models: the MLP 784-128-10 and
# the same MLP with batch normalization after its hidden layer (784-128-BN-
# relu-10; every device keeps its own running statistics, evaluation uses
# device 0's; the hidden layer's He initialization is spelled out so both
# models draw the same initial weights and the same stream rates).  BSP (b = 64, equal weights) and ScaDLES without injection
# against ScaDLES with injection at (alpha, beta) = (0.5,0.5), (0.25,0.25),
# (0.1,0.1), (0.05,0.05); the IID runs of the same model are the reference.
# Injected samples are drawn balanced across the sharing devices
# (sim.inject_draw "balanced", the default); the *pooled* rows draw uniformly
# over the pooled samples instead (sources in proportion to their stream
# rates).  Local SGD (tau = 40), with and without injection, shows a policy
# that averages rarely and so drifts on such data.
#   examples/reproduce/noniid.sh      (QUICK=1 for a smoke run; SEED=n for
#                                      another seed: stream rates, init, data)
. "$(dirname "$0")/lib.sh"
TAG=noniid
HORIZON=$(q 600 40)
PAIRS=$(q "0.5 0.25 0.1 0.05" "0.5")
SEED=${SEED:-1}
base=$REPRO_DIR/base-mlp.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run PREFIX BASECONF: the runs of one model; names PREFIX<config>.
run() {
	local p=$1 b=$2
	mkconf "$b" "$tmp/iid.json" ".sim += {\"devices\": 10, \"max_time\": $HORIZON, \"seed\": $SEED}"
	sim "${p}bsp-iid" "$tmp/iid.json"
	mkconf "$tmp/iid.json" "$tmp/siid.json" '.sim.policy = "scadles" | del(.sim.batch)'
	sim "${p}scadles-iid" "$tmp/siid.json"
	mkconf "$tmp/iid.json" "$tmp/b.json" '.sim.labels_per_device = 1'
	sim "${p}bsp-noniid" "$tmp/b.json"
	mkconf "$tmp/siid.json" "$tmp/s.json" '.sim.labels_per_device = 1'
	sim "${p}scadles-noniid" "$tmp/s.json"
	for a in $PAIRS; do
		mkconf "$tmp/s.json" "$tmp/i.json" ".sim += {\"inject_alpha\": $a, \"inject_beta\": $a}"
		sim "${p}scadles-inject-$a" "$tmp/i.json"
		mkconf "$tmp/i.json" "$tmp/ip.json" '.sim.inject_draw = "pooled"'
		sim "${p}scadles-pooled-$a" "$tmp/ip.json"
	done
	local top=${PAIRS%% *}
	mkconf "$tmp/b.json" "$tmp/bi.json" ".sim += {\"inject_alpha\": $top, \"inject_beta\": $top}"
	sim "${p}bsp-inject-$top" "$tmp/bi.json"
}

run "" "$base"
mkconf "$REPRO_DIR/base-mlp.json" "$tmp/l0.json" \
	".sim += {\"devices\": 10, \"max_time\": $HORIZON, \"seed\": $SEED, \"labels_per_device\": 1,
	 \"policy\": \"localsgd\", \"local_steps\": 40}"
sim localsgd-noniid "$tmp/l0.json"
for a in $PAIRS; do
	mkconf "$tmp/l0.json" "$tmp/li.json" ".sim += {\"inject_alpha\": $a, \"inject_beta\": $a}"
	sim "localsgd-inject-$a" "$tmp/li.json"
done
mkconf "$base" "$tmp/bn.json" \
	'.model.layers = [{"type": "flatten"}, {"type": "dense", "units": 128, "init": "he"},
	 {"type": "batchnorm"}, {"type": "relu"}, {"type": "dense", "units": 10}]'
run bn- "$tmp/bn.json"

# rows PREFIX: the row names of one model, in table order.
rows() {
	local p=$1
	echo "${p}bsp-iid ${p}scadles-iid ${p}bsp-noniid ${p}scadles-noniid"
	for a in $PAIRS; do echo "${p}scadles-inject-$a"; done
	for a in $PAIRS; do echo "${p}scadles-pooled-$a"; done
	echo "${p}bsp-inject-${PAIRS%% *}"
	[ -n "$p" ] || { echo localsgd-noniid; for a in $PAIRS; do echo "localsgd-inject-$a"; done; }
}
{
	echo "Non-IID (10 devices, 1 label each, S10, seed $SEED), Fashion-MNIST, ${HORIZON} virtual s"
	printf '%-25s %10s %12s %8s %14s %14s\n' config final_acc vs_iid steps bytes_up inject_bytes
	for p in "" bn-; do
		[ -z "$p" ] && echo "-- MLP 784-128-10" || echo "-- MLP 784-128-batchnorm-10 (bn-)"
		ref=$(final_acc "${p}scadles-iid")
		for n in $(rows "$p"); do
			a=$(final_acc "$n")
			printf '%-25s %10s %+12.4f %8s %14s %14s\n' "$n" "$a" \
				"$(awk -v a="$a" -v b="$ref" 'BEGIN{print a-b}')" "$(endf "$n" step)" \
				"$(endf "$n" bytes_up)" "$(endf "$n" inject_bytes)"
		done
	done
	echo "vs_iid = final accuracy - ScaDLES IID final accuracy of the same model (mean of the last 3"
	echo "evaluations). inject: drawn balanced across the sharing devices; pooled: uniform over the"
	echo "pooled samples. bn-: every device keeps its own running statistics, evaluation uses device 0's."
} | tee "$OUT/noniid.txt"

for p in "" bn-; do
	args=()
	for n in ${p}scadles-iid ${p}bsp-noniid ${p}scadles-noniid \
		$(for a in $PAIRS; do echo "${p}scadles-inject-$a"; done); do
		tsv "$n" test_acc >"$tmp/$n.tsv"
		args+=("$tmp/$n.tsv|1:2|$n")
	done
	png=$OUT/noniid.png title="Non-IID, 10 devices with 1 label each, MLP"
	[ -n "$p" ] && png=$OUT/noniid-bn.png title="Non-IID, 10 devices with 1 label each, MLP with batchnorm"
	PLOT_EXTRA="set key outside right" plot "$png" "$title" "virtual time (s)" \
		"test accuracy" "${args[@]}"
done
