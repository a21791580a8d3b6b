#!/usr/bin/env bash
# Worker crash: one of two workers of a job is killed with SIGKILL mid-run
# and restarted with the same id. It resumes at its group's committed
# offsets (committed only once the broker acknowledged the updates), its
# seqs continue after the ones it sent before (found on J.grad), every data
# partition ends committed to its end (no record skipped), and each shard's
# version equals the sum of the workers' last seqs (exactly once).
. "$(dirname "$0")/distributed_common.inc"

start_broker wk.0:2 wk.1:2 dj.grad:2 dj.model:2 dj.bcast:2 dj.inject:1 dj.ctl:1
"$SCADLES" feed --bootstrap "$bs" --prefix wk --topics 2 --count 3000 --rate 6000 --data synth \
	--synth-n 2000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
# One topic and consumer group per worker: the restarted worker resumes at
# its own group's committed offsets.
for w in 0 1; do
	write_job "$tmp/j$w.json" "[{\"topic\": \"wk.$w\"}]" "{\"source\": {\"group_id\": \"wk-$w\"}}"
done

"$SCADLES" aggregator -c "$tmp/j0.json" --bootstrap "$bs" --idle-exit 14 >"$tmp/a.out" 2>"$tmp/a.err" &
a=$!
pids="$pids $a"
sleep 1
"$SCADLES" worker -c "$tmp/j0.json" --bootstrap "$bs" --id 0 --throttle 400 --idle-exit 4 \
	>"$tmp/w0.out" 2>"$tmp/w0.err" &
w0=$!
"$SCADLES" worker -c "$tmp/j1.json" --bootstrap "$bs" --id 1 --throttle 400 \
	>"$tmp/w1.out" 2>"$tmp/w1.err" &
w1=$!
pids="$pids $w0 $w1"
wait_trained "$tmp/w1.err" 800 "$w1"
kill -9 "$w1"
wait "$w1" 2>/dev/null || true
echo "worker 1 killed"
"$SCADLES" worker -c "$tmp/j1.json" --bootstrap "$bs" --id 1 --idle-exit 4 \
	>"$tmp/w1b.out" 2>"$tmp/w1b.err" || fail "restarted worker 1 exited $?"
wait "$w0" || fail "worker 0 exited $?"
wait "$a" || fail "aggregator exited $?"
for f in w0 w1b; do
	check_worker "$tmp/$f.out"
done
[ "$(summary "$tmp/w1b.out" .job.seq_base)" -gt 0 ] || fail "the restarted worker's seqs started over"
grep -q 'restart: seqs continue' "$tmp/w1b.err" || fail "no restart line"
# Every data partition is committed to its end by whoever holds it last.
ends=$( (summary "$tmp/w0.out" '.partitions[] | "\(.topic)/\(.partition) \(.committed) \(.end)"'
	summary "$tmp/w1b.out" '.partitions[] | "\(.topic)/\(.partition) \(.committed) \(.end)"') | sort)
echo "$ends"
[ "$(echo "$ends" | awk '$2 == $3' | cut -d' ' -f1 | sort -u | wc -l)" -eq 4 ] ||
	fail "not every partition committed to its end"
check_exactly_once "$tmp/a.out" "$tmp/w0.out" "$tmp/w1b.out"
# The gradient topic itself (agg_selftest ledger): per shard, each update
# once, none missing or left unapplied, nothing bad, as many as the
# workers' last seqs say.
"$AGG_SELFTEST" ledger -c "$tmp/j0.json" --bootstrap "$bs" >"$tmp/ledger.out" 2>"$tmp/ledger.err" ||
	fail "ledger: $(cat "$tmp/ledger.err")"
cat "$tmp/ledger.out"
want=$(($(summary "$tmp/w0.out" .job.seq_last) + $(summary "$tmp/w1b.out" .job.seq_last)))
[ "$(sed 's/^ledger: //' "$tmp/ledger.out" | jq -s --argjson n "$want" \
	'length == 2 and all(.[]; .updates == $n and .missing == 0 and .unapplied == 0 and .bad == 0
	                   and .model_found and .samples > 0)')" = true ] ||
	fail "ledger: expected $want updates per shard, none missing, unapplied or bad"
echo "ok: killed worker resumed from committed offsets, nothing skipped, updates exactly once"
