#!/usr/bin/env bash
# A graceful stop finishes the work: a fixed-batch worker (batches of 64,
# a shuffle pool of 64) on 1000 records -- not a multiple of 64 -- is stopped
# with SIGTERM once every record arrived. It trains the pool and the last
# partial batch, so it trained all 1000 and every partition is committed to
# its end (nothing trained and left uncommitted, nothing read again later).
# A stop at --max-samples trains nothing more: 500 stops after the 8th batch
# of 64 (512), what is pooled goes back uncommitted.
. "$(dirname "$0")/distributed_common.inc"

start_broker sf.0:2
"$SCADLES" feed --bootstrap "$bs" --prefix sf --topics 1 --count 1000 --rate 5000 --data synth \
	--synth-n 1000 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
write_config "$tmp/w.json" '[{"topic": "sf.0"}]' \
	'{"source": {"group_id": "itest-stop-flush"},
	  "worker": {"batch": "fixed", "b": 64, "shuffle": 64, "progress_interval": 0.2}}'
"$SCADLES" worker -c "$tmp/w.json" --bootstrap "$bs" >"$tmp/w.out" 2>"$tmp/w.err" &
pw=$!
pids="$pids $pw"
wait_trained "$tmp/w.err" 872 "$pw"
sleep 1 # every batch of 64 that can form is trained; 1000 - 15 x 64 = 40 stay
kill -TERM "$pw"
wait "$pw" || fail "worker exited $?"
check_worker "$tmp/w.out"
[ "$(summary "$tmp/w.out" .reason)" = signal ] || fail "not stopped by the signal"
[ "$(summary "$tmp/w.out" .trained)" -eq 1000 ] || fail "trained $(summary "$tmp/w.out" .trained) of 1000"
[ "$(summary "$tmp/w.out" .redelivered)" -eq 0 ] || fail "trained records left uncommitted"
check_committed "$tmp/w.out"
"$SCADLES" worker -c "$tmp/w.json" --bootstrap "$bs" --max-samples 500 \
	--set source.group_id=itest-stop-max >"$tmp/m.out" 2>"$tmp/m.err" || fail "max-samples worker exited $?"
[ "$(summary "$tmp/m.out" .reason)" = max-samples ] || fail "not stopped at max-samples"
[ "$(summary "$tmp/m.out" .trained)" -eq 512 ] || fail "max-samples: trained $(summary "$tmp/m.out" .trained), not 512"
[ "$(summary "$tmp/m.out" .identity_ok)" = true ] || fail "max-samples: accounting"
echo "worker_stop_flush: ok (trained 1000, committed = end: $(summary "$tmp/w.out" '[.partitions[] | "\(.committed)=\(.end)"] | join(" ")'))"
