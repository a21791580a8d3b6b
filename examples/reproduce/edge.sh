#!/usr/bin/env bash
# edge.sh — the ScaDLES claim on edge links: 16 devices at the S10 rates, each
# with its own uplink and downlink drawn log-uniformly in 1-20 Mbit/s and a
# one-way latency in 10-50 ms, every update through the server's 20 Mbit/s
# ingress link and its apply queue, encoding charged on the device. The rates are this machine's (bench_codec: top-k 10% +
# error feedback encodes 1.35 GB/s of float32 = 3.4e8 coordinates/s;
# bench_server: asp applies 3.26 GB/s of dense gradient = 8.1e8 coordinates/s).
# Configurations: BSP (b = 64, dense); full ScaDLES (rate-proportional
# batches, truncation, adaptive top-k 10%: compressed only when the gradient's
# variance is low); ScaDLES with top-k 10% on every update (topk); and ScaDLES
# without compression (nocomp: the compression's share);
# each over SEEDS seeds (stream-rate draws, link draws, data order,
# initialisation): median and range of the time to the target, of the speedup
# over BSP with the same seed, and of the final accuracy.
# Then the device-scaling curve: the same edge setting with DEVICES devices
# (16 -> 256), BSP and ScaDLES with top-k, the speedup's median and range.
#   examples/reproduce/edge.sh          (QUICK=1 for a smoke run)
#   SEEDS="1 2 3" DEVICES="16 64" HORIZON=300 JOBS=2 examples/reproduce/edge.sh
. "$(dirname "$0")/lib.sh"
TAG=edge
TARGET=${TARGET:-0.80}
HORIZON=${HORIZON:-$(q 600 60)}
EVAL=${EVAL:-2}
SEEDS=${SEEDS:-$(q "1 2 3 4 5" "1")}
DEVICES=${DEVICES:-$(q "16 32 64 128 256" "16 32")}
base=$REPRO_DIR/base-mlp.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Link bandwidths in bytes/s (LINK_MIN-LINK_MAX per device, INGRESS at the server).
LINK_MIN=${LINK_MIN:-125000}
LINK_MAX=${LINK_MAX:-2500000}
INGRESS=${INGRESS:-2500000}
EDGE=".sim += {\"up_bps\": $LINK_MIN, \"up_bps_max\": $LINK_MAX, \"down_bps\": $LINK_MIN,
	\"down_bps_max\": $LINK_MAX, \"latency\": 0.01, \"latency_max\": 0.05,
	\"server_ingress_bps\": $INGRESS, \"apply_rate\": 810000000, \"encode_rate\": 340000000}"
FULL='.sim.policy = "scadles" | del(.sim.batch) | .sim += {"buffer": "truncation",
	"codec": "adaptive", "codec_ratio": 0.1, "codec_delta": 0.3}'

# run NAME DEVICES SEED STOP FILTER: one simulation of the edge setting
# (STOP: the target accuracy it stops at, 0 = the whole horizon).
run() {
	mkconf "$base" "$tmp/$1-b.json" ".sim.rates = \"S10\" | .sim.max_time = $HORIZON |
		.sim.eval_every = $EVAL | .sim.target_acc = $4 | .sim.devices = $2 | .sim.seed = $3 |
		.train.seed = $3 | $EDGE"
	mkconf "$tmp/$1-b.json" "$tmp/$1.json" "$5"
	sim_bg "$1" "$tmp/$1.json"
}

TOPK="$FULL | .sim.codec = \"topk\" | del(.sim.codec_delta)"
# 16 devices over the whole horizon (final accuracies); the other device
# counts stop at the target (the curve needs the times only).
for s in $SEEDS; do
	run "bsp-16-$s" 16 "$s" 0 '.'
	run "full-16-$s" 16 "$s" 0 "$FULL"
	run "nocomp-16-$s" 16 "$s" 0 "$FULL | .sim.codec = \"none\" | del(.sim.codec_ratio, .sim.codec_delta)"
	run "topk-16-$s" 16 "$s" 0 "$TOPK"
done
for n in $DEVICES; do
	[ "$n" = 16 ] && continue
	for s in $SEEDS; do
		run "bsp-$n-$s" "$n" "$s" "$TARGET" '.'
		run "topk-$n-$s" "$n" "$s" "$TARGET" "$TOPK"
	done
done
sim_wait

# row CONFIG N: median [min, max] of t_target ("-": not reached), of the
# speedup over BSP with the same seed, of the final accuracy (16 devices), of
# the bytes up and of the server's queueing seconds.
row() {
	local t=() sp=() a=() up=() w=()
	for s in $SEEDS; do
		local tc tb
		tc=$(t_acc "$1-$2-$s" "$TARGET")
		tb=$(t_acc "bsp-$2-$s" "$TARGET")
		t+=("$tc")
		sp+=("$(ratio "$tb" "$tc")")
		a+=("$(final_acc "$1-$2-$s")")
		up+=("$(awk -v b="$(endf "$1-$2-$s" bytes_up)" 'BEGIN { printf "%.1f", b / 1e6 }')")
		w+=("$(awk -v w="$(endf "$1-$2-$s" server_wait_s)" 'BEGIN { printf "%.0f", w }')")
	done
	local acc=-
	[ "$2" = 16 ] && acc=$(med_range "${a[@]}")
	printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$(med_range "${t[@]}")" \
		"$(med_ratio "${sp[@]}")" "$acc" "$(med_range "${up[@]}")" "$(med_range "${w[@]}")"
}

tab=$OUT/edge.md
{
	echo "Edge links ($(awk -v a="$LINK_MIN" -v b="$LINK_MAX" -v c="$INGRESS" \
		'BEGIN { printf "%g-%g Mbit/s per device, 10-50 ms, %g Mbit/s server ingress", \
		a * 8e-6, b * 8e-6, c * 8e-6 }')), S10 rates,"
	echo "target test accuracy $TARGET, horizon $HORIZON s, evaluations every $EVAL s;"
	echo "median [min, max] over seeds $SEEDS."
	echo
	echo "| config | devices | t_target (s) | speedup vs bsp | final acc | MB up | server queue (s) |"
	echo "|---|---|---|---|---|---|---|"
	row bsp 16
	row full 16
	row nocomp 16
	row topk 16
	for n in $DEVICES; do
		[ "$n" = 16 ] && continue
		row bsp "$n"
		row topk "$n"
	done
	echo
	echo "t_target: virtual s to the target (\"-\": not reached in the horizon; it counts as later"
	echo "than any time in the median). speedup: t_target(bsp) / t_target with the same seed; a"
	echo "seed where either is missing is left out, and \"(k of n)\" says so. final acc: mean of"
	echo "the last 3 evaluations (16 devices run the whole horizon; the others stop at the target)."
	echo "server queue: seconds updates waited for the ingress link and the apply queue, summed."
} >"$tab"
cat "$tab"
record "$TAG" "SEEDS=\"$SEEDS\" DEVICES=\"$DEVICES\" HORIZON=$HORIZON examples/reproduce/edge.sh"

# The scaling curve: speedup median and range against the device count; a
# count where no seed has both times (BSP never at the target) is named on
# the plot instead.
: >"$OUT/edge-scaling.tsv"
missing=
for n in $DEVICES; do
	sp=()
	for s in $SEEDS; do
		sp+=("$(ratio "$(t_acc "bsp-$n-$s" "$TARGET")" "$(t_acc "topk-$n-$s" "$TARGET")")")
	done
	r=$(med_ratio "${sp[@]}")
	if [ "$r" = - ]; then
		missing="$missing $n"
	else
		echo "$r" | tr -d '[],' |
			awk -v d="$n" '{ print d "\t" $1 "\t" $2 "\t" $3 }' >>"$OUT/edge-scaling.tsv"
	fi
done
if command -v gnuplot >/dev/null && [ -s "$OUT/edge-scaling.tsv" ]; then
	note=
	[ -z "$missing" ] || note="set label 1 \"no speedup at${missing} devices: BSP misses $TARGET in $HORIZON s\" at graph 0.03, graph 0.92"
	xmax=$(printf '%s\n' $DEVICES | sort -n | tail -n 1)
	gnuplot <<EOF
set terminal pngcairo size 800,500
set output "$OUT/edge-scaling.png"
set title "ScaDLES (top-k 10%) speedup over BSP on edge links (S10, target $TARGET)"
set xlabel "devices"; set ylabel "speedup (median, range over seeds)"
set logscale x 2; set grid; set key bottom right; set xrange [12:$xmax * 1.2]
$note
plot "$OUT/edge-scaling.tsv" using 1:2:3:4 with yerrorlines title "ScaDLES top-k / BSP"
EOF
fi
