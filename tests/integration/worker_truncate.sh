#!/usr/bin/env bash
# Truncation and malformed records: a burst of 3000 records plus 5 malformed
# ones (3 of the wrong length, 2 without a numeric key) against a throttled
# worker whose streams keep one 0.2 s window. Drops must be counted, the
# malformed records rejected per kind, logged once per kind and sent to the
# dead-letter topic with their error and origin in headers; every offset is
# committed (trained, dropped or rejected) and the identity is exact.
. "$(dirname "$0")/worker_common.inc"

start_broker tr.0:1 tr.dlq:1
"$SCADLES" feed --bootstrap "$bs" --topic tr.0 --count 1500 --rate 3000 --data synth \
	--synth-n 2000 --quiet >"$tmp/feed1.out" 2>"$tmp/feed.err" || fail "feed failed"
# Malformed records in the middle of the stream.
printf '1:abc\n2:defg\n3:hi\n' | kcat -P -b "$bs" -t tr.0 -K: || fail "kcat produce failed"
v=$(head -c 784 /dev/zero | tr '\0' 'A')
printf 'z:%s\nq:%s\n' "$v" "$v" | kcat -P -b "$bs" -t tr.0 -K: || fail "kcat produce failed"
"$SCADLES" feed --bootstrap "$bs" --topic tr.0 --count 1500 --rate 3000 --data synth \
	--synth-n 2000 --seed 2 --quiet >"$tmp/feed2.out" 2>>"$tmp/feed.err" || fail "feed failed"

write_config "$tmp/w.json" '[{"topic": "tr.0"}]' \
	'{"streams": {"policy": "truncate", "window": 0.2, "keep_min": 8, "cap": 4096},
	  "source": {"dead_letter_topic": "tr.dlq"}}'
"$SCADLES" worker -c "$tmp/w.json" --bootstrap "$bs" --throttle 500 --idle-exit 2 \
	>"$tmp/w.out" 2>"$tmp/w.err" || fail "worker exited $?"
cut -c 1-400 "$tmp/w.out"

s() { summary "$tmp/w.out" "$1"; }
[ "$(s .identity_ok)" = true ] || fail "accounting identity broken"
[ "$(s .consumed)" -eq 3005 ] || fail "consumed $(s .consumed), expected 3005"
[ "$(s .dropped)" -gt 0 ] || fail "nothing dropped by truncation"
[ "$(s .rejected)" -eq 5 ] || fail "rejected $(s .rejected), expected 5"
[ "$(s '.faults.wrong_length')" -eq 3 ] || fail "wrong_length $(s .faults)"
[ "$(s '.faults.bad_key')" -eq 2 ] || fail "bad_key $(s .faults)"
sum=$(s '.trained + .dropped + .rejected')
[ "$sum" -eq 3005 ] || fail "trained + dropped + rejected = $sum, expected 3005"
[ "$(s .lost)" -eq 0 ] || fail "lost $(s .lost)"
[ "$(s .dead_letter)" -eq 5 ] || fail "dead_letter $(s .dead_letter), expected 5"
check_committed "$tmp/w.out"

# Logged once per kind, with topic, partition and offset.
[ "$(grep -c 'malformed record (wrong_length)' "$tmp/w.err")" -eq 1 ] || fail "wrong_length not logged once"
[ "$(grep -c 'malformed record (bad_key)' "$tmp/w.err")" -eq 1 ] || fail "bad_key not logged once"
grep -Eq 'tr\.0 \[0\] offset 1500: malformed record \(wrong_length\)' "$tmp/w.err" ||
	fail "the first malformed record is not named by topic/partition/offset"

# The dead-letter topic holds the originals with the error kind and origin.
kcat -C -b "$bs" -t tr.dlq -o beginning -e -q -f '%k|%h\n' >"$tmp/dlq" || fail "kcat consume failed"
[ "$(wc -l <"$tmp/dlq")" -eq 5 ] || fail "dead-letter topic holds $(wc -l <"$tmp/dlq") records"
[ "$(grep -c 'scadles.error=wrong_length' "$tmp/dlq")" -eq 3 ] || fail "dlq headers: $(cat "$tmp/dlq")"
[ "$(grep -c 'scadles.error=bad_key' "$tmp/dlq")" -eq 2 ] || fail "dlq headers: $(cat "$tmp/dlq")"
grep -q '^1|.*scadles.topic=tr.0,scadles.partition=0,scadles.offset=1500' "$tmp/dlq" ||
	fail "dlq record lacks its origin: $(head -n 1 "$tmp/dlq")"
echo "truncate: trained $(s .trained) + dropped $(s .dropped) + rejected 5 = 3005; 5 dead letters"
echo "worker_truncate: ok"
