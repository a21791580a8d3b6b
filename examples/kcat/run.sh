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
name=kcat
. "$here/../plugin_stream.inc"

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
