#!/usr/bin/env bash
# `scadles demo --bootstrap` on a real Apache Kafka: the run creates its own
# topics there (demo-<unix time>-<pid>-fmnist.N and the job's), feeds them
# at rates drawn from a ScaDLES rate set (--rate-set S10 --seed 2: the rates
# `scadles feed` draws for that set and seed), trains 2 workers to a 0.70
# target and reports the time to it; every update applied, exact accounting,
# nothing lost. A rate set that does not exist is a usage error.
. "$(dirname "$0")/distributed_common.inc"
need_real_kafka
[ -e /usr/share/datasets/fashion-mnist ] || { echo "Fashion-MNIST not installed"; exit 77; }

rc=0
out=$("$SCADLES" demo --rate-set S3 2>&1) || rc=$?
[ $rc -eq 2 ] || fail "--rate-set S3 exited $rc"
echo "$out" | grep -q -- '--rate-set S3: expected S1, S2, S10 or S20' ||
	fail "--rate-set S3 said: $out"

"$SCADLES" demo --bootstrap "$bs" --workers 2 --topics 3 --rate-set S10 --seed 2 --target 0.70 \
	--duration 90 --eval-every 1 --no-plot --out "$tmp/demo" >"$tmp/demo.out" 2>"$tmp/demo.err" ||
	fail "demo exited $?"
cat "$tmp/demo.out"
grep -q '^demo summary (target reached):' "$tmp/demo.out" || fail "target not reached"
grep -Eq '^  target            0\.7000 reached after [0-9.]+ s \([0-9.]+ s after the first model version\)$' \
	"$tmp/demo.out" || fail "target line: $(grep '^  target' "$tmp/demo.out")"
run=$(sed -n 's/^demo: broker .*; job \(demo-[0-9]*-[0-9]*\): .*/\1/p' "$tmp/demo.err")
[ -n "$run" ] || fail "no run name in: $(head -n 3 "$tmp/demo.err")"
grep -q "\"name\": \"$run\"" "$tmp/demo/job.json" || fail "job.json does not name job $run"
# The feed's topics are the run's, at the rates `scadles feed` draws for S10, seed 2.
"$SCADLES" feed --bootstrap "$bs" --prefix "$run-check" --topics 3 --rate-set S10 --seed 2 \
	--count 1 --quiet >"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed exited $?"
rates() { sed -n 's/^feed: topic [^ ]*\.\([0-9]*\) target \([0-9.]*\)\/s.*/\1 \2/p' "$1"; }
[ "$(rates "$tmp/demo/feed.out")" = "$(rates "$tmp/feed.out")" ] ||
	fail "feed rates: demo $(rates "$tmp/demo/feed.out" | paste -sd' '), S10 seed 2 $(rates "$tmp/feed.out" | paste -sd' ')"
grep -q "^feed: topic $run-fmnist.2 " "$tmp/demo/feed.out" || fail "feed topics: $(cat "$tmp/demo/feed.out")"
read -r sent acked applied stale < <(awk '/^  updates/ {print $2, $4, $6, $8}' "$tmp/demo.out")
[ "$sent" -gt 0 ] && [ "$sent" -eq "$acked" ] && [ "$acked" -eq "$applied" ] && [ "$stale" -eq 0 ] ||
	fail "updates: sent $sent, acknowledged $acked, applied $applied, stale $stale"
grep -q 'accounting exact (2/2' "$tmp/demo.out" || fail "record accounting"
grep -q '^  records lost      0$' "$tmp/demo.out" || fail "records lost"
echo "ok: job $run on $bs"
