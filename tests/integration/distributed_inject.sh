#!/usr/bin/env bash
# Injection in a distributed job: three workers on their own topics share
# every batch's first quarter on J.inject (alpha 1, beta 0.25); worker 2
# reads 400 records, the others 2000, so it shares a fifth of what worker 1
# shares. Every worker
# mixes foreign samples in, never its own, none bad, and worker 0 draws them
# balanced across workers 1 and 2 (per-worker quotas), not in proportion to
# what each shared. Updates stay exactly once. The first J.inject record,
# replayed 20 times by a raw producer (kcat) while they run, is refused by
# the workers that read the copies and did not send it (inject_replayed).
. "$(dirname "$0")/distributed_common.inc"

start_broker ij.0:1 ij.1:1 ij.2:1 dj.grad:2 dj.model:2 dj.bcast:2 dj.inject:1 dj.ctl:1
"$SCADLES" feed --bootstrap "$bs" --topic ij.0 --topic ij.1 --count 2000 --rate 8000 --data synth \
	--synth-n 2000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
"$SCADLES" feed --bootstrap "$bs" --topic ij.2 --count 400 --rate 8000 --data synth \
	--synth-n 2000 --seed 2 --quiet >"$tmp/feed2.out" 2>"$tmp/feed2.err" || fail "feed failed"
for w in 0 1 2; do
	write_job "$tmp/j$w.json" "[{\"topic\": \"ij.$w\"}]" \
		"{\"source\": {\"group_id\": \"ij-$w\"}, \"job\": {\"workers\": 3, \"inject_alpha\": 1, \"inject_beta\": 0.25}}"
done

"$SCADLES" aggregator -c "$tmp/j0.json" --bootstrap "$bs" --idle-exit 8 >"$tmp/a.out" 2>"$tmp/a.err" &
a=$!
pids="$pids $a"
sleep 1
"$SCADLES" worker -c "$tmp/j0.json" --bootstrap "$bs" --id 0 --throttle 400 --idle-exit 3 \
	>"$tmp/w0.out" 2>"$tmp/w0.err" &
w0=$!
"$SCADLES" worker -c "$tmp/j1.json" --bootstrap "$bs" --id 1 --throttle 2000 --idle-exit 3 \
	>"$tmp/w1.out" 2>"$tmp/w1.err" &
w1=$!
"$SCADLES" worker -c "$tmp/j2.json" --bootstrap "$bs" --id 2 --throttle 200 --idle-exit 3 \
	>"$tmp/w2.out" 2>"$tmp/w2.err" &
w2=$!
pids="$pids $w0 $w1 $w2"
# the first J.inject record, replayed 20 times while the workers run (about
# 1 MB; 200 copies, 10 MB, once moved a reader's position out of range on
# the embedded broker, which reset it past the copies)
wait_trained "$tmp/w0.err" 64 "$w0"
for _ in $(seq 1 100); do
	kcat -b "$bs" -C -t dj.inject -p 0 -o beginning -c 1 -e -q -f '%s' >"$tmp/inj0" 2>/dev/null
	[ -s "$tmp/inj0" ] && break
	sleep 0.05
done
[ -s "$tmp/inj0" ] || fail "nothing on dj.inject"
# shellcheck disable=SC2046
kcat -b "$bs" -P -t dj.inject -p 0 $(for _ in $(seq 1 20); do echo "$tmp/inj0"; done) ||
	fail "kcat produce to dj.inject"
for p in $w0 $w1 $w2; do wait "$p" || fail "a worker exited $?"; done
wait "$a" || fail "aggregator exited $?"

for w in 0 1 2; do
	f="$tmp/w$w.out"
	echo "worker $w: shared $(summary "$f" .job.injected_out), mixed in $(summary "$f" .job.injected_in)," \
		"from $(summary "$f" '.job.injected_from | tostring'), own skipped $(summary "$f" .job.own_skipped)," \
		"bad $(summary "$f" .job.inject_bad), replayed $(summary "$f" .job.inject_replayed)"
	[ "$(summary "$f" .identity_ok)" = true ] || fail "worker $w: accounting"
	[ "$(summary "$f" .job.injected_out)" -gt 0 ] || fail "worker $w shared nothing"
	[ "$(summary "$f" .job.injected_in)" -gt 0 ] || fail "worker $w mixed nothing in"
	[ "$(summary "$f" .job.inject_bad)" -eq 0 ] || fail "worker $w: bad J.inject records"
	[ "$(summary "$f" .job.own_skipped)" -gt 0 ] || fail "worker $w did not see its own samples"
	[ "$(summary "$f" ".job.injected_from[$w]")" -eq 0 ] || fail "worker $w mixed in its own samples"
	[ "$(summary "$f" '.job.injected_from | add')" -eq "$(summary "$f" .job.injected_in)" ] ||
		fail "worker $w: injected_from does not add up to injected_in"
done
# the workers that did not send it refuse what they read of the copies
# before they end (the sender skips them as its own; a reader may also be
# reset past them to the end of the partition)
replayed=0
for w in 0 1 2; do
	replayed=$((replayed + $(summary "$tmp/w$w.out" .job.inject_replayed)))
done
[ "$replayed" -ge 1 ] || fail "no worker refused a replayed J.inject record"
out1=$(summary "$tmp/w1.out" .job.injected_out)
out2=$(summary "$tmp/w2.out" .job.injected_out)
from1=$(summary "$tmp/w0.out" '.job.injected_from[1]')
from2=$(summary "$tmp/w0.out" '.job.injected_from[2]')
awk -v a="$out1" -v b="$out2" 'BEGIN { exit !(a >= 3 * b) }' ||
	fail "worker 1 shared $out1, worker 2 $out2: the rates are not skewed enough to tell"
# Balanced quotas: once both have shared, each of worker 0's draws splits
# evenly; only the draws before worker 2's first share go all to worker 1.
# (Newest first, each used once, as before, gave at most worker 2's 100.)
awk -v a="$from1" -v b="$from2" 'BEGIN { exit !(b > 0 && a <= 1.5 * b) }' ||
	fail "worker 0 mixed in $from1 of worker 1's and $from2 of worker 2's samples: not balanced"
check_exactly_once "$tmp/a.out" "$tmp/w0.out" "$tmp/w1.out" "$tmp/w2.out"
echo "ok: injected samples balanced across workers ($from1 vs $from2 while they shared $out1 vs $out2)"
