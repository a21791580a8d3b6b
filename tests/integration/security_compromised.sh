#!/usr/bin/env bash
# A compromised worker, measured by accuracy. The tabular example
# (examples/tabular, 8 features, 4 classes) as authenticated jobs of 3
# workers on 3 partitions; worker 2 holds its genuine key but runs the
# command built with tests/integration/compromised.c: every update it sends
# is its gradient x -10, and in the scadles cases it claims 1024 samples
# (b_max) for batches of 64. Its updates verify: only the aggregation
# limits stand between it and the model. Each case's final model (model
# pull, then eval on the held-out 2,000 records) is measured:
#
#   honest          bsp, 3 honest workers: the reference
#   bsp-off         bsp, job.limits norm_factor, samples_factor and
#                   model_max_abs 0: no limit at all
#   bsp-default     bsp, the default limits
#   bsp-median      bsp, job.limits.robust median
#   scadles-default scadles, the default limits (samples_factor bounds a
#                   claim against the worker's own history, which a worker
#                   that lies from its first update makes)
#   scadles-median  scadles, robust median: the LR scales with 3 x the
#                   median claim, not the sum of the claims
#
# Asserted: the honest job and both median jobs reach MIN_ACC, the job
# without limits falls at least 0.2 below the honest one (the attack is
# real), and every job trains every record (trained - orphaned >= fed:
# the last batches' commits that a rebalance refused are counted as
# redelivered, for a later run). The default cases are printed,
# not asserted: the defaults bound a huge update, not a reversed one of
# ordinary size (docs/SECURITY.md says so). CASES (default: all) picks some.
#
# A median outvotes one bad update only in rounds where two honest ones meet
# it. When the group's rebalances leave an honest worker with no partition
# (the embedded broker's group did so in a CI run on this machine),
# the rounds hold the attacker and one honest worker, and no robust rule can
# tell the two apart. A case whose honest workers did not each train at least
# a sixth of the records is therefore run once more, on its own fresh topics
# and group, and says so; a second such run fails the test.
. "$(dirname "$0")/distributed_common.inc"
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }

# The honest and median jobs measured 0.86-0.88 here, and bsp-median 0.7930
# with a CI run beside it (68 steps: rounds that closed with fewer updates);
# a round's composition (which updates meet in it) moves with timing and
# processor, so the floor sits below that, far above the 0.21-0.25 of the
# unprotected jobs.
MIN_ACC=0.70
cases=${CASES:-honest bsp-off bsp-default bsp-median scadles-default scadles-median}
build_compromised
data=$tmp/data
python3 examples/tabular/gen.py "$data" --train 12000 --eval 2000 --seed 1 >/dev/null || fail "gen.py"
n=$(wc -l <"$data/train.csv") # the CSV half of the 12,000
topics="sc.csv:3"
for c in $cases; do
	for j in sc${c//-/} sc${c//-/}r; do
		topics="$topics $j.grad:2 $j.model:2 $j.bcast:2 $j.inject:1 $j.ctl:1"
	done
done
# shellcheck disable=SC2086
start_broker $topics
head -c 24 /dev/urandom | base64 >"$tmp/job.key"
for p in 0 1 2; do
	awk -v p=$p '(NR - 1) % 3 == p' "$data/train.csv" | kcat -P -b "$bs" -t sc.csv -p $p ||
		fail "kcat sc.csv [$p]"
done

# case_conf CASE [SUFFIX]: the job of a case, from the example's job.json;
# SUFFIX r names the rerun's job, topics and group.
case_conf() {
	local policy=${1%%-*} limits
	[ "$1" = honest ] && policy=bsp
	case $1 in
	*-off) limits='{"norm_factor": 0, "samples_factor": 0, "model_max_abs": 0}' ;;
	*-median) limits='{"robust": "median"}' ;;
	*) limits='{}' ;;
	esac
	jq --arg e "$data/eval.csv" --arg k "$tmp/job.key" --arg name "sc${1//-/}${2:-}" \
		--arg policy "$policy" --argjson limits "$limits" '
	  .eval.file = $e | .eval.decoder = "sc.csv"
	  | .source.topics = [{topic: "sc.csv", format: "csv", label_column: 8,
	                       first_feature_column: 0}]
	  | .source.group_id = $name | .worker.idle_exit = 4
	  | .job.name = $name | .job.workers = 3 | .job.sync.policy = $policy
	  | .job.auth = {key_file: $k} | .job.limits = $limits' \
		examples/tabular/job.json >"$tmp/$1${2:-}.json"
}

# run_case CASE [SUFFIX]: runs a case's job and measures its final model in
# acc[CASE]; returns 3 when an honest worker trained under a sixth of the
# records (the rounds then lacked an honest majority: see above).
run_case() {
	local c=$1 r=${2:-} cf=$tmp/$1${2:-} a w cmd net thin=
	case_conf "$c" "$r"
	"$SCADLES" aggregator -c "$cf.json" -b "$bs" --no-create --idle-exit 6 \
		>"$cf.a.out" 2>"$cf.a.err" &
	a=$!
	pids="$pids $a"
	sleep 1
	local ws=()
	for w in 0 1 2; do
		cmd=$SCADLES
		if [ $w -eq 2 ] && [ "$c" != honest ]; then
			cmd=$tmp/scadles-compromised
			export COMPROMISED_SCALE=-10
			[ "${c%%-*}" = scadles ] && export COMPROMISED_SAMPLES=1024
		fi
		"$cmd" worker -c "$cf.json" -b "$bs" --id $w >"$cf.w$w.out" 2>"$cf.w$w.err" &
		ws+=($!)
		pids="$pids $!"
		unset COMPROMISED_SCALE COMPROMISED_SAMPLES
	done
	for w in "${ws[@]}"; do
		timeout 300 tail --pid="$w" -f /dev/null || fail "$c$r: a worker did not end"
		wait "$w" || fail "$c$r: a worker exited $?"
	done
	wait "$a" || fail "$c$r: the aggregator exited $?"
	net=0
	for w in 0 1 2; do
		check_worker "$cf.w$w.out"
		net=$((net + $(summary "$cf.w$w.out" '.trained - .orphaned')))
		[ $w -eq 2 ] && [ "$c" != honest ] && continue
		[ "$(summary "$cf.w$w.out" .trained)" -ge $((n / 6)) ] ||
			thin="$thin worker $w trained $(summary "$cf.w$w.out" .trained) of $n;"
	done
	[ "$net" -ge "$n" ] || fail "$c$r: trained - orphaned = $net of $n"
	if [ -n "$thin" ]; then
		echo "$c$r: no honest majority in the rounds:$thin not measured"
		return 3
	fi
	"$SCADLES" model pull -c "$cf.json" -b "$bs" -o "$cf.ckpt" 2>"$cf.pull.err" ||
		fail "$c$r: model pull exited $?"
	"$SCADLES" eval -c "$cf.json" --checkpoint "$cf.ckpt" >"$cf.eval" 2>/dev/null ||
		fail "$c$r: eval exited $?"
	acc[$c]=$(awk '/^test accuracy:/ {print $3}' "$cf.eval")
	[ -n "${acc[$c]}" ] || fail "$c$r: eval printed $(cat "$cf.eval")"
	echo "$c$r: test accuracy ${acc[$c]}; aggregator steps $(summary "$cf.a.out" .steps)," \
		"clipped $(summary "$cf.a.out" .clipped), rolled back $(summary "$cf.a.out" .rolled_back)," \
		"rejected $(summary "$cf.a.out" .rejected_total)"
}

declare -A acc
for c in $cases; do
	run_case "$c" && continue
	run_case "$c" r || fail "$c: no honest majority in the rounds twice"
done

atleast() { awk -v a="$1" -v m="$2" 'BEGIN {exit !(a >= m)}'; }
for c in honest bsp-median scadles-median; do
	[ -n "${acc[$c]:-}" ] || continue
	atleast "${acc[$c]}" $MIN_ACC || fail "$c: test accuracy ${acc[$c]} < $MIN_ACC"
done
if [ -n "${acc[honest]:-}" ] && [ -n "${acc[bsp-off]:-}" ]; then
	atleast "${acc[honest]}" "$(awk -v a="${acc[bsp-off]}" 'BEGIN {print a + 0.2}')" ||
		fail "bsp-off reached ${acc[bsp-off]}, honest ${acc[honest]}: the attack did no harm"
fi
echo "ok: a worker sending -10x gradients (claiming 1024 samples in scadles) is held by the median"
