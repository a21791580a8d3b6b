#!/usr/bin/env bash
# A rebalance with samples buffered: worker a consumes four partitions with a
# full persist buffer (throttled), then worker b joins the group. a's
# partitions are revoked: its buffered samples are returned uncommitted
# (counted "returned") and read again by their next owner; samples already
# in a's shuffle buffer are trained there and again by the next owner
# ("orphaned"); trained records whose commit the broker refused during the
# rebalance (the embedded broker refuses commits while a rebalance is under
# way) are read again too ("redelivered"). Both identities stay exact,
# nothing is lost, and over both workers
# trained - orphaned - redelivered = records produced.
. "$(dirname "$0")/worker_common.inc"

start_broker rb.0:2 rb.1:2
"$SCADLES" feed --bootstrap "$bs" --prefix rb --topics 2 --count 4000 --rate 8000 --data synth \
	--synth-n 2000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
produced=8000
write_config "$tmp/w.json" '[{"topic": "rb.0"}, {"topic": "rb.1"}]' \
	'{"source": {"group_id": "itest-rebalance"}, "streams": {"policy": "persist", "cap": 1024},
	  "worker": {"shuffle": 64, "progress_interval": 0.2}}'
"$SCADLES" worker -c "$tmp/w.json" --bootstrap "$bs" --throttle 1000 --idle-exit 6 \
	>"$tmp/a.out" 2>"$tmp/a.err" &
pa=$!
pids="$pids $pa"
for _ in $(seq 1 300); do
	n=$(grep -Eo 'trained [0-9]+' "$tmp/a.err" | tail -n 1 | cut -d' ' -f2)
	[ "${n:-0}" -ge 1000 ] && break
	sleep 0.1
done
[ "${n:-0}" -ge 1000 ] || fail "worker a trained only ${n:-0} in 30 s"
"$SCADLES" worker -c "$tmp/w.json" --bootstrap "$bs" --throttle 1000 --idle-exit 6 \
	>"$tmp/b.out" 2>"$tmp/b.err" &
pb=$!
pids="$pids $pb"
wait "$pa" || fail "worker a exited $?"
wait "$pb" || fail "worker b exited $?"

net=0
for w in a b; do
	s() { summary "$tmp/$w.out" "$1"; }
	[ "$(s .identity_ok)" = true ] || fail "$w: accounting identity broken"
	[ "$(s .lost)" -eq 0 ] || fail "$w: records lost"
	[ "$(s .consumed)" -eq "$(s '.trained + .dropped + .rejected + .returned + .buffered + .inflight')" ] ||
		fail "$w: identity does not add up"
	echo "worker $w: consumed $(s .consumed) trained $(s .trained) returned $(s .returned) orphaned $(s .orphaned) redelivered $(s .redelivered) rebalances $(s .rebalances)"
	net=$((net + $(s '.trained - .orphaned - .redelivered')))
done
[ "$(summary "$tmp/a.out" .returned)" -gt 0 ] || fail "no buffered sample was returned at the rebalance"
[ "$net" -eq "$produced" ] || fail "trained - orphaned - redelivered over both workers = $net, expected $produced"
echo "worker_rebalance: ok"
