#!/usr/bin/env bash
# examples/python/run.sh — a plain confluent-kafka consumer (consume.py)
# trains a model through the scadles interceptor plugin: the embedded broker,
# a feed publishing Fashion-MNIST's training set (three passes) to four
# topics, then the consumer, a consumer-group member whose configuration
# sets plugin.library.paths=libscadles. The final statistics (with
# test_accuracy on the t10k set) go to $OUT/summary.json.
#
#   make && examples/python/run.sh            (BUILD=build-x for another build dir)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
name=python
. "$here/../plugin_stream.inc"

# The host: a plain confluent-kafka consumer. Only its configuration names the plugin.
start=$(date +%s.%N)
/usr/bin/python3 "$here/consume.py" "$bs" '^fmnist\..*' "${JOB:-$here/../kcat/job.json}" \
	"$OUT/summary.json" 3
end=$(date +%s.%N)
echo "consumer finished in $(echo "$end - $start" | bc) s; summary in $OUT/summary.json"
jq -c '{consumed, trained, rejected, dropped: .queue.dropped, test_accuracy}' "$OUT/summary.json"
