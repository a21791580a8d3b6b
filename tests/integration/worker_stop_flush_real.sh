#!/usr/bin/env bash
# The graceful stop on a real Kafka (the feed creates the data topic): see
# worker_stop_flush.inc.
. "$(dirname "$0")/distributed_real.inc"
stop_prefix="${run}sf"
. "$(dirname "$0")/worker_stop_flush.inc"
echo "worker_stop_flush_real: ok (trained 1000, committed = end: $(summary "$tmp/w.out" '[.partitions[] | "\(.committed)=\(.end)"] | join(" ")'))"
