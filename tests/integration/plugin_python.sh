#!/usr/bin/env bash
# The interceptor plugin in Python's confluent-kafka, unmodified, on the
# embedded broker: examples/python/consume.py (a plain consumer-group
# member whose configuration names the plugin) trains on every record it
# consumes and the plugin's summary reports test accuracy; a bad scadles.*
# property makes the Consumer constructor raise with the plugin's message.
set -eu
BUILD=${BUILD:-build}
SCADLES=${SCADLES:-$BUILD/scadles}
top=$PWD
. "$(dirname "$0")/worker_common.inc"
PY=/usr/bin/python3
"$PY" -c 'import confluent_kafka' 2>/dev/null ||
	{ echo "python3-confluent-kafka is not installed (scripts/deps.sh installs it)"; exit 77; }
use_plugin
[ -e /usr/share/datasets/fashion-mnist ] || { echo "Fashion-MNIST is not installed"; exit 77; }
start_broker pyk.0:4 pyk.1:4
"$SCADLES" feed --bootstrap "$bs" --prefix pyk --topics 2 --count 3000 --rate 20000 --quiet \
	>"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed failed"
jq '.worker.batch = "fixed" | .worker.b = 32' examples/kcat/job.json >"$tmp/job.json"

# 1) The consumer trains through the plugin.
"$PY" examples/python/consume.py "$bs" '^pyk\..*' "$tmp/job.json" "$tmp/summary.json" 2 \
	>"$tmp/py.out" 2>"$tmp/py.err" || fail "consume.py exited $?"
grep -q '^consumed 6000 records' "$tmp/py.out" || fail "consume.py: $(cat "$tmp/py.out")"
[ -s "$tmp/summary.json" ] || fail "no summary written"
s() { jq -r "$1" "$tmp/summary.json"; }
[ "$(s .queue.pushed)" -eq 6000 ] || fail "plugin saw $(s .queue.pushed) records"
[ "$(s '.queue.dropped + .queue.refused + .rejected')" -eq 0 ] || fail "records dropped"
left=$(s '.consumed - .trained')
[ "$left" -lt 64 ] || fail "$left records not trained"
acc=$(s .test_accuracy)
awk -v a="$acc" 'BEGIN { exit !(a >= 0.60) }' || fail "test accuracy $acc < 0.60 after 6000 records"
echo "python: 6000 consumed, $(s .trained) trained over $(s '.streams | length') streams, test accuracy $acc"

# 2) A bad property: the constructor raises with the plugin's message.
"$PY" - "$bs" >"$tmp/bad.out" 2>&1 <<'PYEOF' || fail "bad property accepted: $(cat "$tmp/bad.out")"
import sys
from confluent_kafka import Consumer, KafkaException
try:
    Consumer({"bootstrap.servers": sys.argv[1], "group.id": "g",
              "plugin.library.paths": "libscadles", "scadles.optim.lr": "fast"})
except KafkaException as e:
    print("rejected:", e)
    sys.exit(0)
sys.exit(1)
PYEOF
grep -q 'scadles.optim.lr' "$tmp/bad.out" || fail "message does not name the property: $(cat "$tmp/bad.out")"
echo "bad property: $(cat "$tmp/bad.out")"
echo "plugin_python: ok"
