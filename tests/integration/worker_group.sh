#!/usr/bin/env bash
# Two workers in one consumer group split four one-partition topics (the
# worker's default assignor, roundrobin; range would give all four to one):
# each consumes a disjoint half, both train, and over the two workers every
# record is trained (records inflight in a worker when a
# rebalance revoked their partition are trained there and again by the new
# owner, as are those whose commit was refused during the rebalance:
# trained - orphaned - redelivered adds up to the records produced, exactly).
. "$(dirname "$0")/worker_common.inc"

start_broker gr.0:1 gr.1:1 gr.2:1 gr.3:1
write_config "$tmp/w.json" '[{"topic": "gr.0"}, {"topic": "gr.1"}, {"topic": "gr.2"}, {"topic": "gr.3"}]' \
	'{"source": {"group_id": "itest-group"}}'
for w in a b; do
	"$SCADLES" worker -c "$tmp/w.json" --bootstrap "$bs" --idle-exit 8 --throttle 2000 \
		>"$tmp/$w.out" 2>"$tmp/$w.err" &
	eval "pid_$w=$!"
	pids="$pids $!"
done
# Both members hold two partitions before any record is produced.
for _ in $(seq 1 300); do
	na=$(grep -Eo 'assigned [0-9]+ partition' "$tmp/a.err" | tail -n 1 | cut -d' ' -f2)
	nb=$(grep -Eo 'assigned [0-9]+ partition' "$tmp/b.err" | tail -n 1 | cut -d' ' -f2)
	[ "${na:-0}" -eq 2 ] && [ "${nb:-0}" -eq 2 ] && break
	sleep 0.1
done
[ "${na:-0}" -eq 2 ] && [ "${nb:-0}" -eq 2 ] || fail "the group did not split 2 + 2 (a: ${na:-0}, b: ${nb:-0})"
"$SCADLES" feed --bootstrap "$bs" --prefix gr --topics 4 --count 1000 --rate 2000 --data synth \
	--synth-n 2000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
wait "$pid_a" || fail "worker a exited $?"
wait "$pid_b" || fail "worker b exited $?"

for w in a b; do
	[ "$(summary "$tmp/$w.out" .identity_ok)" = true ] || fail "$w: accounting identity broken"
	[ "$(summary "$tmp/$w.out" .lost)" -eq 0 ] || fail "$w: records lost"
	[ "$(summary "$tmp/$w.out" .trained)" -gt 0 ] || fail "$w trained nothing"
	summary "$tmp/$w.out" '.streams[] | select(.consumed > 0) | .topic' | sort >"$tmp/$w.topics"
	echo "worker $w: trained $(summary "$tmp/$w.out" .trained) from $(tr '\n' ' ' <"$tmp/$w.topics")"
done
[ "$(wc -l <"$tmp/a.topics")" -eq 2 ] && [ "$(wc -l <"$tmp/b.topics")" -eq 2 ] ||
	fail "each worker should have consumed two topics"
[ -z "$(comm -12 "$tmp/a.topics" "$tmp/b.topics")" ] || fail "a topic was consumed by both workers"
net=$(( $(summary "$tmp/a.out" '.trained - .orphaned - .redelivered') + $(summary "$tmp/b.out" '.trained - .orphaned - .redelivered') ))
[ "$net" -eq 4000 ] || fail "trained - orphaned - redelivered over both workers = $net, expected 4000"
echo "worker_group: ok"
