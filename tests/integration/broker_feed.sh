#!/usr/bin/env bash
# Embedded broker + feed: starts `scadles broker`, feeds topics at set rates
# for a few seconds, consumes everything back with kcat and checks counts,
# per-topic rates (from record timestamps, within 5%), non-IID label
# partitions and the json/csv formats. Always stops the broker.
set -eu
SCADLES=${SCADLES:-build/scadles}
if ! command -v kcat >/dev/null; then
	echo "kcat is not installed (scripts/deps.sh installs it)"
	exit 77
fi
tmp=$(mktemp -d)
bpid=""
cleanup() {
	if [ -n "$bpid" ]; then
		kill "$bpid" 2>/dev/null || true
		wait "$bpid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

"$SCADLES" broker --topic rt.0:2 --bootstrap-file "$tmp/bootstrap" >"$tmp/broker.out" 2>"$tmp/broker.err" &
bpid=$!
for _ in $(seq 1 100); do
	[ -s "$tmp/bootstrap" ] && break
	kill -0 "$bpid" 2>/dev/null || { cat "$tmp/broker.err"; fail "broker exited"; }
	sleep 0.1
done
[ -s "$tmp/bootstrap" ] || fail "no bootstrap file after 10 s"
bs=$(cat "$tmp/bootstrap")
grep -qx "bootstrap: $bs" "$tmp/broker.out" || fail "stdout does not announce $bs"
"$SCADLES" broker --probe "$bs" || fail "probe of $bs failed"
echo "broker at $bs"

consume() { # topic format -> one line per record
	kcat -C -b "$bs" -t "$1" -o beginning -e -q -X fetch.wait.max.ms=10 -f "$2"
}

# 1) four topics at rates drawn from uniform(150, 50), 5 s, raw format.
"$SCADLES" feed --bootstrap-file "$tmp/bootstrap" --prefix rt --topics 4 \
	--rate-dist uniform:150:50 --seed 7 --duration 5 --data synth --synth-n 2000 \
	>"$tmp/feed.out" 2>"$tmp/feed.err" || { cat "$tmp/feed.err"; fail "feed exited $?"; }
cat "$tmp/feed.out"
grep -q 'failed 0 undelivered 0' "$tmp/feed.out" || fail "feed reported delivery failures"
targets=""
for i in 0 1 2 3; do
	line=$(grep "^feed: topic rt.$i " "$tmp/feed.out") || fail "no summary for rt.$i"
	target=$(echo "$line" | sed -E 's/.* target ([0-9.]+)\/s .*/\1/')
	delivered=$(echo "$line" | sed -E 's/.* delivered ([0-9]+) .*/\1/')
	dev=$(echo "$line" | sed -E 's/.*achieved [0-9.]+\/s \(([-+0-9.]+)%\).*/\1/')
	awk -v d="$dev" 'BEGIN { exit !(d >= -5 && d <= 5) }' || fail "rt.$i: feed's own rate off by $dev%"
	consume "rt.$i" '%T\n' | sort -n >"$tmp/ts.$i"
	n=$(wc -l <"$tmp/ts.$i")
	[ "$n" -eq "$delivered" ] || fail "rt.$i: consumed $n records, feed delivered $delivered"
	rate=$(awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.2f", (NR - 1) / ((b - a) / 1000) }' "$tmp/ts.$i")
	awk -v r="$rate" -v t="$target" 'BEGIN { exit !(r >= 0.95 * t && r <= 1.05 * t) }' ||
		fail "rt.$i: consumed rate $rate/s vs target $target/s (beyond 5%)"
	echo "rt.$i: target $target/s, $n records consumed, timestamp rate $rate/s"
	targets="$targets $target"
done
# The four drawn rates differ (seeded draw, not one constant).
[ "$(echo $targets | tr ' ' '\n' | sort -u | wc -l)" -eq 4 ] || fail "rates not drawn per topic:$targets"

# 2) non-IID: 3 labels per topic, --count, key and header carry the label.
"$SCADLES" feed --bootstrap "$bs" --prefix niid --topics 2 --labels-per-topic 3 --count 300 \
	--rate 2000 --data synth --synth-n 2000 --quiet >"$tmp/niid.out" 2>&1 ||
	{ cat "$tmp/niid.out"; fail "non-IID feed failed"; }
for i in 0 1; do
	consume "niid.$i" '%k %h %S\n' >"$tmp/niid.$i"
	[ "$(wc -l <"$tmp/niid.$i")" -eq 300 ] || fail "niid.$i: expected 300 records"
	want=$(seq $((i * 3)) $((i * 3 + 2)) | tr '\n' ' ')
	got=$(cut -d' ' -f1 "$tmp/niid.$i" | sort -u | tr '\n' ' ')
	[ "$got" = "$want" ] || fail "niid.$i: labels '$got', expected '$want'"
	awk '{ if ($2 != "label=" $1 || $3 != 784) exit 1 }' "$tmp/niid.$i" ||
		fail "niid.$i: header or size mismatch: $(head -n 1 "$tmp/niid.$i")"
done
echo "non-IID: topic 0 labels 0-2, topic 1 labels 3-5, header and 784-byte values ok"

# 3) json and csv formats.
"$SCADLES" feed --bootstrap "$bs" --topic fmt.json --count 20 --rate 1000 --format json \
	--data synth --synth-n 100 --quiet >/dev/null 2>&1 || fail "json feed failed"
"$SCADLES" feed --bootstrap "$bs" --topic fmt.csv --count 20 --rate 1000 --format csv \
	--data synth --synth-n 100 --quiet >/dev/null 2>&1 || fail "csv feed failed"
consume fmt.json '%s\n' >"$tmp/json"
consume fmt.csv '%s\n' >"$tmp/csv"
[ "$(wc -l <"$tmp/json")" -eq 20 ] || fail "json: expected 20 records"
awk -F, '{ if (NF != 785 || $1 !~ /^[0-9]$/) exit 1 }' "$tmp/csv" || fail "csv: bad record"
[ "$(wc -l <"$tmp/csv")" -eq 20 ] || fail "csv: expected 20 records"
grep -Ev '^\{"label":[0-9],"pixels":\[[0-9]+(,[0-9]+){783}\]\}$' "$tmp/json" &&
	fail "json: a record does not match {\"label\":L,\"pixels\":[784 values]}"
echo "json and csv records well-formed"

# 4) bad input is a usage error with a message, not a crash.
if "$SCADLES" feed --bootstrap "$bs" --rate-dist gauss:1:2 >/dev/null 2>"$tmp/bad"; then
	fail "bad --rate-dist accepted"
fi
grep -q 'rate-dist' "$tmp/bad" || fail "bad --rate-dist: no message naming it"

# 5) SIGTERM stops the broker cleanly and removes the bootstrap file.
kill -TERM "$bpid"
wait "$bpid" || fail "broker exited non-zero on SIGTERM"
bpid=""
[ ! -e "$tmp/bootstrap" ] || fail "bootstrap file left behind"
echo "broker_feed: ok"
