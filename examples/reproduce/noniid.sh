#!/usr/bin/env bash
# noniid.sh — non-IID data and data injection (claim 3): 10 devices with one
# label each (S10 rates, Fashion-MNIST MLP).  BSP (b = 64, equal weights) and
# ScaDLES without injection against ScaDLES with injection at (alpha, beta) =
# (0.5,0.5), (0.25,0.25), (0.1,0.1), (0.05,0.05); the IID runs are the
# reference.  Injected samples are drawn balanced across the sharing devices
# (sim.inject_draw "balanced", the default); the scadles-pooled rows draw
# uniformly over the pooled samples instead (sources in proportion to their
# stream rates).  Local SGD (tau = 40), with and without injection, shows a
# policy that averages rarely and so drifts on such data.
#   examples/reproduce/noniid.sh      (QUICK=1 for a smoke run)
. "$(dirname "$0")/lib.sh"
TAG=noniid
HORIZON=$(q 600 40)
PAIRS=$(q "0.5 0.25 0.1 0.05" "0.5")
base=$REPRO_DIR/base-mlp.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkconf "$base" "$tmp/iid.json" ".sim += {\"devices\": 10, \"max_time\": $HORIZON}"
sim bsp-iid "$tmp/iid.json"
mkconf "$tmp/iid.json" "$tmp/siid.json" '.sim.policy = "scadles" | del(.sim.batch)'
sim scadles-iid "$tmp/siid.json"
mkconf "$tmp/iid.json" "$tmp/b.json" '.sim.labels_per_device = 1'
sim bsp-noniid "$tmp/b.json"
mkconf "$tmp/b.json" "$tmp/l.json" '.sim += {"policy": "localsgd", "local_steps": 40}'
sim localsgd-noniid "$tmp/l.json"
mkconf "$tmp/siid.json" "$tmp/s.json" '.sim.labels_per_device = 1'
sim scadles-noniid "$tmp/s.json"
for p in $PAIRS; do
	mkconf "$tmp/s.json" "$tmp/i.json" ".sim += {\"inject_alpha\": $p, \"inject_beta\": $p}"
	sim "scadles-inject-$p" "$tmp/i.json"
	mkconf "$tmp/i.json" "$tmp/ip.json" '.sim.inject_draw = "pooled"'
	sim "scadles-pooled-$p" "$tmp/ip.json"
	mkconf "$tmp/l.json" "$tmp/li.json" ".sim += {\"inject_alpha\": $p, \"inject_beta\": $p}"
	sim "localsgd-inject-$p" "$tmp/li.json"
done

ref=$(final_acc scadles-iid)
{
	echo "Non-IID (10 devices, 1 label each, S10), Fashion-MNIST MLP, ${HORIZON} virtual s"
	printf '%-22s %10s %12s %8s %14s %14s\n' config final_acc vs_iid steps bytes_up inject_bytes
	for n in bsp-iid scadles-iid bsp-noniid localsgd-noniid scadles-noniid \
		$(for p in $PAIRS; do echo "scadles-inject-$p"; done) \
		$(for p in $PAIRS; do echo "scadles-pooled-$p"; done) \
		$(for p in $PAIRS; do echo "localsgd-inject-$p"; done); do
		a=$(final_acc "$n")
		printf '%-22s %10s %+12.4f %8s %14s %14s\n' "$n" "$a" \
			"$(awk -v a="$a" -v b="$ref" 'BEGIN{print a-b}')" "$(endf "$n" step)" \
			"$(endf "$n" bytes_up)" "$(endf "$n" inject_bytes)"
	done
	echo "vs_iid = final accuracy - ScaDLES IID final accuracy (mean of the last 3 evaluations)."
	echo "inject: drawn balanced across the sharing devices; pooled: uniform over pooled samples."
} | tee "$OUT/noniid.txt"

args=()
for n in scadles-iid bsp-noniid localsgd-noniid scadles-noniid \
	$(for p in $PAIRS; do echo "scadles-inject-$p"; done); do
	tsv "$n" test_acc >"$tmp/$n.tsv"
	args+=("$tmp/$n.tsv|1:2|$n")
done
PLOT_EXTRA="set key outside right" plot "$OUT/noniid.png" "Non-IID, 10 devices with 1 label each" "virtual time (s)" \
	"test accuracy" "${args[@]}"
