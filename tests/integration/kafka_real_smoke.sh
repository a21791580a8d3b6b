#!/usr/bin/env bash
# Real Apache Kafka smoke test: with SCADLES_KAFKA=<bootstrap> (e.g. from
# `scripts/kafka.sh up`), probes the broker, feeds three topics of 3
# partitions (the feed creates them) for 3 s and consumes them back,
# checking the partition counts, counts and per-topic rates (within 5%);
# a second feed into an existing topic with another --partitions uses it as
# it is.
# Skips (exit 77) when SCADLES_KAFKA is not set.
set -eu
SCADLES=${SCADLES:-build/scadles}
if [ -z "${SCADLES_KAFKA:-}" ]; then
	echo "SCADLES_KAFKA is not set (run scripts/kafka.sh up and export SCADLES_KAFKA=\$(cat build/kafka/bootstrap))"
	exit 77
fi
if ! command -v kcat >/dev/null; then
	echo "kcat is not installed (scripts/deps.sh installs it)"
	exit 77
fi
bs=$SCADLES_KAFKA
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

"$SCADLES" broker --probe "$bs" --timeout-ms 10000 || fail "no metadata from $bs"
# A fresh prefix per run: the real broker keeps topics between runs.
prefix="smoke$(date +%s)$$"
"$SCADLES" feed --bootstrap "$bs" --prefix "$prefix" --topics 3 --rate-set S10 --seed 3 \
	--partitions 3 --duration 3 --format raw >"$tmp/feed.out" 2>"$tmp/feed.err" ||
	{ cat "$tmp/feed.err"; fail "feed exited non-zero"; }
cat "$tmp/feed.out"
grep -q 'failed 0 undelivered 0' "$tmp/feed.out" || fail "delivery failures"
for i in 0 1 2; do
	line=$(grep "^feed: topic $prefix.$i " "$tmp/feed.out") || fail "no summary for $prefix.$i"
	target=$(echo "$line" | sed -E 's/.* target ([0-9.]+)\/s .*/\1/')
	delivered=$(echo "$line" | sed -E 's/.* delivered ([0-9]+) .*/\1/')
	kcat -C -b "$bs" -t "$prefix.$i" -o beginning -e -q -f '%T %k %S\n' >"$tmp/c.$i"
	n=$(wc -l <"$tmp/c.$i")
	[ "$n" -eq "$delivered" ] || fail "$prefix.$i: consumed $n, delivered $delivered"
	awk '{ if ($2 !~ /^[0-9]$/ || $3 != 784) exit 1 }' "$tmp/c.$i" || fail "$prefix.$i: bad record"
	rate=$(sort -n "$tmp/c.$i" | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.2f", (NR - 1) / ((b - a) / 1000) }')
	awk -v r="$rate" -v t="$target" 'BEGIN { exit !(r >= 0.95 * t && r <= 1.05 * t) }' ||
		fail "$prefix.$i: rate $rate/s vs target $target/s"
	parts=$(kcat -L -J -b "$bs" -t "$prefix.$i" | jq '.topics[0].partitions | length')
	[ "$parts" = 3 ] || fail "$prefix.$i: $parts partitions, --partitions 3"
	echo "$prefix.$i: target $target/s, consumed $n, timestamp rate $rate/s, $parts partitions"
done
"$SCADLES" feed --bootstrap "$bs" --topic "$prefix.0" --partitions 5 --count 1 --quiet \
	>"$tmp/feed2.out" 2>"$tmp/feed2.err" || { cat "$tmp/feed2.err"; fail "second feed exited non-zero"; }
parts=$(kcat -L -J -b "$bs" -t "$prefix.0" | jq '.topics[0].partitions | length')
[ "$parts" = 3 ] || fail "$prefix.0: $parts partitions after a second feed with --partitions 5"
echo "kafka_real_smoke: ok"
