#!/usr/bin/env bash
# examples/kcat/run.sh — kcat, unmodified, trains a model through the scadles
# interceptor plugin: the embedded broker, a feed publishing Fashion-MNIST's
# training set (three passes) to four topics, then kcat consuming them as a
# consumer-group member with plugin.library.paths=libscadles. The final
# statistics (with test_accuracy on the t10k set) go to $OUT/summary.json.
#
#   make && examples/kcat/run.sh            (BUILD=build-x for another build dir)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-build}
SCADLES=${SCADLES:-$top/$BUILD/scadles}
PASSES=${PASSES:-3}     # passes over the 60,000 training images
PARTS=${PARTS:-16}      # partitions per topic (the embedded broker keeps ~5 MiB each)
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/scadles-kcat.XXXXXX")}
export LD_LIBRARY_PATH="$top/$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$OUT"
bpid=""
trap '[ -n "$bpid" ] && kill "$bpid" 2>/dev/null; wait 2>/dev/null || true' EXIT

topics=()
for i in 0 1 2 3; do topics+=(--topic "fmnist.$i:$PARTS"); done
"$SCADLES" broker "${topics[@]}" --bootstrap-file "$OUT/bootstrap" >"$OUT/broker.out" 2>"$OUT/broker.err" &
bpid=$!
for _ in $(seq 1 100); do [ -s "$OUT/bootstrap" ] && break; sleep 0.1; done
bs=$(cat "$OUT/bootstrap")

# The stream: PASSES x 60,000 records over four topics (label in the key).
"$SCADLES" feed --bootstrap "$bs" --topics 4 --count $((PASSES * 15000)) --rate 20000 --quiet \
	>"$OUT/feed.out" 2>"$OUT/feed.err"
tail -n 1 "$OUT/feed.out"

# The host: plain kcat. Only the -X properties name the plugin.
start=$(date +%s.%N)
kcat -b "$bs" -G scadles-kcat -o beginning -e -q -f '' \
	-X plugin.library.paths=libscadles \
	-X scadles.config="${JOB:-$here/job.json}" \
	-X scadles.summary.file="$OUT/summary.json" \
	-X scadles.queue.block.ms=-1 \
	-X auto.offset.reset=earliest \
	'^fmnist\..*'
end=$(date +%s.%N)
echo "kcat finished in $(echo "$end - $start" | bc) s; summary in $OUT/summary.json"
jq -c '{consumed, trained, rejected, dropped: .queue.dropped, test_accuracy}' "$OUT/summary.json"
