#!/usr/bin/env bash
# adsp.sh — ADSP vs BSP, SSP (s = 40), local SGD (tau = 40) and ADACOMM under
# compute heterogeneity (claim 6): 8 devices (Fashion-MNIST MLP, batch 32,
# 10 Mbit/s links, streams never the bottleneck).  The paper's H = mean(speed)
# / min(speed); the simulator spaces per-sample times linearly from the
# fastest to `heterogeneity` x slower, so H = 1.45, 2, 2.6, 3.2 map to
# heterogeneity 2.144, 4.238, 7.316, 10.999.  Metric: virtual time until the
# global model's test loss (full test set) reaches each of LOSSES, and the
# share of device time spent blocked.  Time scales (SCALES):
#   edge  the paper's setting: compute-dominated steps (fastest device 25
#         samples/s, 1.28 s per batch; the slowest 2.7-14 s) and the
#         reference code's Gamma = 60 s, B_min = 10 s.
#   fast  10 x faster compute (250 samples/s), so one BSP round is mostly
#         the model's upload + download; Gamma = 10 s, B_min = 1 s.
# Every baseline runs on a small learning-rate grid and `best` is the fastest
# baseline run of the same seed (per target); gains are per seed, then the
# median [min, max] over SEEDS.  $OUT/adsp.tsv holds every run,
# $OUT/adsp-summary.md the summary rows (examples/reproduce/summary.sh).
#   examples/reproduce/adsp.sh      (QUICK=1 for a smoke run)
#   SCALES="edge:0.04:60:10:2400:25" HS="3.2:10.999" SEEDS="1 2" \
#     examples/reproduce/adsp.sh     (a subset; name:per_sample:gamma:b_min:
#                                     horizon:eval_every, H:heterogeneity)
. "$(dirname "$0")/lib.sh"
TAG=${TAG:-adsp}
TARGET_LOSS=${TARGET_LOSS:-0.45}
SEEDS=${SEEDS:-$(q "1 2 3 4 5" "1")}
SCALES=${SCALES:-$(q "edge:0.04:60:10:2400:25" "edge:0.04:60:10:150:25")}
HS=${HS:-$(q "2:4.238 2.6:7.316 3.2:10.999" "3.2:10.999")}
# The curves flatten near the end, so the target matters: several are shown.
LOSSES=${LOSSES:-$(q "0.6 0.5 0.45" "1 0.8")}
PAPER=62.4
# Baselines, each on a learning-rate grid: BSP (server optimizer, momentum
# 0.9) at lr 0.025 / 0.05 / 0.1; SSP with plain SGD at lr 0.025 and 0.0125
# (with momentum 0.9 it diverges); local SGD (tau = 40) and ADACOMM (tau_0 =
# 40, tau adapted every T0 = Gamma) with local momentum 0.9 at local lr 0.025
# and 0.05.
BASES_GIVEN=${BASES:+1}
BASES=${BASES:-$(q "bsp-lr.025 bsp-lr.05 bsp-lr.1 ssp-lr.025 ssp-lr.0125 localsgd-lr.025 \
localsgd-lr.05 adacomm-lr.025 adacomm-lr.05" "bsp-lr.05 ssp-lr.025 localsgd-lr.05 adacomm-lr.05")}
# ADSP: the online DeltaC search (the paper's method; tuner target training
# loss TARGET_LOSS, re-search every 10 Gamma) and, as a reference, a fixed
# commit every B_min (DeltaC = Gamma / B_min).  Local steps use lr 0.05 and
# momentum 0.9, BSP's middle setting.
POLS="$BASES adsp adsp-max"
LOCAL='"local_lr": 0.05, "local_momentum": 0.9'
base=$REPRO_DIR/base-adsp.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# filter POLICY GAMMA B_MIN: the jq filter of POLICY's "sim" / "optim" settings.
filter() {
	local p=$1 gamma=$2 bmin=$3 lr=${1##*-lr}
	case $p in
	bsp-lr*) echo ".sim.policy = \"bsp\" | .optim.lr = 0$lr" ;;
	ssp-lr*) echo ".sim += {\"policy\": \"ssp\", \"staleness\": 40} |
		.optim += {\"lr\": 0$lr, \"momentum\": 0}" ;;
	localsgd-lr*) echo ".sim += {\"policy\": \"localsgd\", \"local_steps\": 40,
		\"local_lr\": 0$lr, \"local_momentum\": 0.9}" ;;
	adacomm-lr*) echo ".sim += {\"policy\": \"localsgd\", \"local_steps\": 40,
		\"adacomm_interval\": $gamma, \"local_lr\": 0$lr, \"local_momentum\": 0.9}" ;;
	adsp) echo ".sim += {\"policy\": \"adsp\", \"gamma\": $gamma, \"commit_min\": $bmin,
		\"tune\": true, \"target_loss\": $TARGET_LOSS,
		\"research_every\": $(awk -v g="$gamma" 'BEGIN{print 10 * g}'), $LOCAL}" ;;
	adsp-max) echo ".sim += {\"policy\": \"adsp\", \"gamma\": $gamma, \"commit_min\": $bmin,
		\"commit_rate\": $(awk -v g="$gamma" -v b="$bmin" 'BEGIN{print g / b}'), $LOCAL}" ;;
	*) echo "adsp: unknown policy $p" >&2; return 1 ;;
	esac
}

for sc in $SCALES; do
	IFS=: read -r S ps gamma bmin horizon every <<<"$sc"
	for hh in $HS; do
		H=${hh%%:*} h=${hh#*:}
		for seed in $SEEDS; do
			for p in $POLS; do
				n=$S-$p-H$H-s$seed
				mkconf "$base" "$tmp/$n.json" "$(filter "$p" "$gamma" "$bmin") |
					.train.seed = $seed | .sim += {\"heterogeneity\": $h,
					\"per_sample\": $ps, \"max_time\": $horizon, \"eval_every\": $every,
					\"eval_samples\": 0}"
				sim_bg "$n" "$tmp/$n.json"
			done
		done
	done
done
sim_wait

# t_tloss NAME LOSS: first virtual time the test loss fell to LOSS ("-" if never).
t_tloss() {
	jq -rs --argjson l "$2" '[.[] | select(.event == null and .test_loss != null and
		.test_loss <= $l) | .t] | if length > 0 then .[0] else "-" end' "$OUT/$TAG/$1.jsonl"
}
# gain T BEST: 1 - T / BEST in percent ("-" if either is missing).
gain() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-") print "-";
	else printf "%.1f\n", (1 - a / b) * 100 }'; }
# med_pct VALUE...: med_dec (lib.sh) with 1 decimal.
med_pct() { med_dec 1 "$@"; }
# The median alone, "-" when it is defined on fewer than half the seeds.
med_only() { echo "$1" | awk '$1 == "-" { print "-"; exit } { k = n = 1 } /of/ {
	k = $(NF - 2); sub(/^\(/, "", k); n = $NF; sub(/\)$/, "", n) }
	{ print (2 * k < n ? "-" : $1) }'; }

# One row per run.
tsv=$OUT/$TAG.tsv
{
	printf 'scale\tH\tpolicy\tseed'
	for tl in $LOSSES; do printf '\tt_%s' "$tl"; done
	printf '\tblocked_pct\tfinal_acc\tsamples\tdeltac_last\tdeltac_mean\ttau_last\tt_dc_top\n'
	for sc in $SCALES; do
		IFS=: read -r S _ gamma bmin _ <<<"$sc"
		top=$(awk -v g="$gamma" -v b="$bmin" 'BEGIN { print g / b }')
		for hh in $HS; do
			H=${hh%%:*}
			for seed in $SEEDS; do
				for p in $POLS; do
					n=$S-$p-H$H-s$seed f=$OUT/$TAG/$S-$p-H$H-s$seed.jsonl
					printf '%s\t%s\t%s\t%s' "$S" "$H" "$p" "$seed"
					for tl in $LOSSES; do printf '\t%s' "$(t_tloss "$n" "$tl")"; done
					bl=$(tail -n 1 "$f" | jq -r \
						'(.wait_s + .send_wait_s) / (.t * .devices) * 100 | . * 10 | round / 10')
					# DeltaC: the commit rate of the last metric line and its mean
					# over the lines (adsp); tau: ADACOMM's last local steps.
					dc=$(jq -rs '[.[] | select(.event == null) | .commit_rate // empty] |
						if length > 0 then "\(.[-1])\t\(add / length * 100 | round / 100)"
						else "-\t-" end' "$f")
					# t_dc_top: the first metric line whose commit rate is the
					# top one, Gamma / B_min (a commit every B_min).
					tt=$(jq -rs --argjson top "$top" '[.[] | select(.event == null and
						.commit_rate != null and .commit_rate >= $top - 1e-9) | .t] |
						if length > 0 then .[0] else "-" end' "$f")
					printf '\t%s\t%s\t%s\t%s\t%s\t%s\n' "$bl" "$(final_acc "$n")" \
						"$(endf "$n" samples)" "$dc" "$(endf "$n" local_steps)" "$tt"
				done
			done
		done
	done
} >"$tsv"

# Per-seed best baseline and gains: $tmp/gains, rows scale H loss seed best
# best_policy gain_adsp gain_max.
col() { tsv_col "$tsv" "$@"; }
for sc in $SCALES; do
	S=${sc%%:*}
	for hh in $HS; do
		H=${hh%%:*}
		for tl in $LOSSES; do
			for seed in $SEEDS; do
				best=- bp=-
				for p in $BASES; do
					t=$(col "t_$tl" scale="$S" H="$H" policy="$p" seed="$seed")
					[ "$t" = - ] && continue
					if [ "$best" = - ] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a < b)}'; then
						best=$t bp=$p
					fi
				done
				ta=$(col "t_$tl" scale="$S" H="$H" policy=adsp seed="$seed")
				tm=$(col "t_$tl" scale="$S" H="$H" policy=adsp-max seed="$seed")
				printf '%s %s %s %s %s %s %s %s\n' "$S" "$H" "$tl" "$seed" "$best" "$bp" \
					"$(gain "$ta" "$best")" "$(gain "$tm" "$best")"
			done
		done
	done
done >"$tmp/gains"
# g SCALE H LOSS FIELD: the per-seed values of a gains column (5 best,
# 6 best_policy, 7 gain_adsp, 8 gain_max).
g() { awk -v s="$1" -v h="$2" -v l="$3" -v f="$4" '$1 == s && $2 == h && $3 == l { print $f }' \
	"$tmp/gains"; }

ns=$(echo $SEEDS | wc -w)
{
	echo "ADSP vs BSP / SSP / local SGD / ADACOMM, 8 devices, seeds $SEEDS (ADSP tuner target" \
		"training loss $TARGET_LOSS); medians [min, max] over the seeds"
	for sc in $SCALES; do
		IFS=: read -r S ps gamma bmin horizon every <<<"$sc"
		echo "== $S: per_sample $ps s (fastest device), Gamma $gamma s, B_min $bmin s," \
			"${horizon} virtual s, test loss every $every s"
		for tl in $LOSSES; do
			echo "-- virtual s to test loss $tl (median over the seeds; - : not reached by half or more)"
			printf '%-5s' H
			for p in $POLS; do printf ' %8s' "${p/-lr/}"; done
			printf ' %6s\n' best
			for hh in $HS; do
				H=${hh%%:*}
				printf '%-5s' "$H"
				for p in $POLS; do
					printf ' %8s' "$(med $(col "t_$tl" scale="$S" H="$H" policy="$p"))"
				done
				printf ' %6s\n' "$(med $(g "$S" "$H" "$tl" 5))"
			done
		done
		echo "-- gain = 1 - t / best of the same seed, % (paper: up to $PAPER%); bound = 1 - 1/H"
		printf '%-5s %-5s %6s %-26s %-26s %-24s %-24s %s\n' H loss bound "adsp" "adsp-max" \
			"adsp per seed" "adsp-max per seed" "best baseline per seed"
		for hh in $HS; do
			H=${hh%%:*}
			for tl in $LOSSES; do
				printf '%-5s %-5s %6s %-26s %-26s %-24s %-24s %s\n' "$H" "$tl" \
					"$(awk -v h="$H" 'BEGIN { printf "%.1f", (1 - 1 / h) * 100 }')" \
					"$(med_pct $(g "$S" "$H" "$tl" 7))" "$(med_pct $(g "$S" "$H" "$tl" 8))" \
					"$(g "$S" "$H" "$tl" 7 | tr '\n' ' ')" "$(g "$S" "$H" "$tl" 8 | tr '\n' ' ')" \
					"$(g "$S" "$H" "$tl" 6 | sed 's/-lr/@/' | tr '\n' ' ')"
			done
		done
		echo "-- verdicts on the median gain (paper: up to $PAPER%)"
		for hh in $HS; do
			H=${hh%%:*}
			for tl in $LOSSES; do
				for f in 7:adsp 8:adsp-max; do
					printf '%-5s %-5s %-9s %s\n' "$H" "$tl" "${f#*:}" \
						"$(verdict "$(med_only "$(med_pct $(g "$S" "$H" "$tl" "${f%%:*}"))")" "$PAPER" %)"
				done
			done
		done
		echo "-- end of run (medians over the seeds)"
		printf '%-5s %-16s %9s %9s %9s %12s %12s %9s %13s\n' H policy final_acc blocked% samples \
			DeltaC_last DeltaC_mean tau_last t_DeltaC_top
		for hh in $HS; do
			H=${hh%%:*}
			for p in $POLS; do
				v() { col "$1" scale="$S" H="$H" policy="$p"; }
				printf '%-5s %-16s %9s %9s %9s %12s %12s %9s %13s\n' "$H" "$p" \
					"$(med $(v final_acc))" "$(med $(v blocked_pct))" "$(med $(v samples))" \
					"$(med $(v deltac_last))" "$(med $(v deltac_mean))" "$(med $(v tau_last))" \
					"$(med $(v t_dc_top))"
			done
		done
	done
	# The online search's path: per H and seed, each virtual time (on the
	# metric lines, every eval_every s) at which the commit rate changed.
	echo "-- the online search's commit rate DeltaC over the run (adsp): t->DeltaC at each change"
	for sc in $SCALES; do
		S=${sc%%:*}
		for hh in $HS; do
			H=${hh%%:*}
			for seed in $SEEDS; do
				printf '%-5s %-5s s%-3s %s\n' "$S" "$H" "$seed" "$(jq -r 'select(.event == null and
					.commit_rate != null) | "\(.t | floor) \(.commit_rate)"' \
					"$OUT/$TAG/$S-adsp-H$H-s$seed.jsonl" |
					awk '$2 != last { printf "%s->%s ", $1, $2; last = $2 }')"
			done
		done
	done
	echo "best = the fastest baseline run of the seed (all learning rates); gains are per seed"
	echo "(- : one of the two never reached the loss), then median [min, max] ((k of n): defined on"
	echo "k seeds). bound: ADSP's largest gain when BSP waits for the slowest device every round and"
	echo "both learn the same per sample (ADSP trains at most H x BSP's samples per second)."
	echo "blocked% = device time waiting for models or the uplink; DeltaC_last / DeltaC_mean: the"
	echo "commit rate at the end / averaged over the metric lines; tau_last: ADACOMM's last tau;"
	echo "t_DeltaC_top: virtual s until the commit rate first reached Gamma / B_min (a commit every"
	echo "B_min; - : never, or not ADSP)."
	echo "best baseline per seed: policy@lr (- : none reached the loss)."
} | tee "$OUT/$TAG.txt"
given=""
[ -n "$BASES_GIVEN" ] && given="$given BASES=\"$BASES\""
[ "$TAG" != adsp ] && given="$given TAG=$TAG"
record "$TAG" "SCALES=\"$SCALES\" HS=\"$HS\" SEEDS=\"$SEEDS\" LOSSES=\"$LOSSES\" JOBS=$JOBS${given} examples/reproduce/adsp.sh"

# Summary rows: the largest H of the first scale, every target, adsp and adsp-max.
S=${SCALES%%:*} H=$(echo "$HS" | tr ' ' '\n' | tail -n 1) H=${H%%:*}
for p in adsp adsp-max; do
	[ "$p" = adsp ] && name="ADSP (online search)" f=7 || name="ADSP, fixed commit every B_min (reference)" f=8
	for tl in $LOSSES; do
		m=$(med_pct $(g "$S" "$H" "$tl" "$f"))
		echo "| $name vs best baseline, $S, H = $H, time to test loss $tl | up to $PAPER% sooner |" \
			"gain (%) $m | $SEEDS | $(verdict "$(med_only "$m")" "$PAPER" %) |"
	done
done >"$OUT/$TAG-summary.md"

# Plots: test loss, median over the seeds with the [min, max] band (bands
# first, so that no band hides a line).
for sc in $SCALES; do
	S=${sc%%:*}
	for hh in $HS; do
		H=${hh%%:*}
		bands="" lines="" sep=""
		k=0
		for p in bsp-lr.05 ssp-lr.025 adacomm-lr.025 adsp adsp-max; do
			case " $POLS " in *" $p "*) ;; *) continue ;; esac
			k=$((k + 1))
			for seed in $SEEDS; do tsv "$S-$p-H$H-s$seed" test_loss; done |
				awk '{ v[$1] = v[$1] " " $2 } END { for (t in v) { n = split(v[t], a, " ")
					for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
						x = a[j]; a[j] = a[j - 1]; a[j - 1] = x }
					printf "%s %s %s %s\n", t, (a[int((n + 1) / 2)] + a[int(n / 2) + 1]) / 2,
						a[1], a[n] } }' | sort -g >"$tmp/$p.dat"
			bands="$bands$sep'$tmp/$p.dat' using 1:3:4 with filledcurves fs transparent solid 0.2"
			bands="$bands lc $k notitle"
			lines="$lines, '$tmp/$p.dat' using 1:2 with lines lw 2 lc $k title '$p'"
			sep=", "
		done
		command -v gnuplot >/dev/null || { echo "reproduce: gnuplot missing, no plots" >&2; break 2; }
		gnuplot <<GP
set terminal png size 900,560
set output '$OUT/$TAG-$S-H$H.png'
set title 'ADSP vs baselines, $S, H = $H: test loss, median and [min, max] over seeds $SEEDS'
set xlabel 'virtual time (s)'
set ylabel 'test loss'
set key top right
set grid
set yrange [0.3:1.2]
plot $bands$lines
GP
	done
done
