#!/usr/bin/env bash
# The graceful stop on the embedded broker: see worker_stop_flush.inc.
. "$(dirname "$0")/distributed_common.inc"
start_broker sf.0:2
stop_prefix=sf
. "$(dirname "$0")/worker_stop_flush.inc"
echo "worker_stop_flush: ok (trained 1000, committed = end: $(summary "$tmp/w.out" '[.partitions[] | "\(.committed)=\(.end)"] | join(" ")'))"
