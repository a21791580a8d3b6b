#!/usr/bin/env bash
# `scadles predict` on a real Apache Kafka broker (SCADLES_KAFKA): the
# checks of predict.sh (predict_common.inc) on topics named after this run,
# with raw records, then with JSON records decoded per their topic's own
# source.topics element (30 MB of them: more than the embedded broker keeps
# in a partition).
. "$(dirname "$0")/predict_common.inc"
if [ -z "${SCADLES_KAFKA:-}" ] || [ "$SCADLES_KAFKA" = unavailable ]; then
	echo "SCADLES_KAFKA is not set (scripts/kafka.sh up)"
	exit 77
fi
run="pr$$x$(date +%s)"
predict_end_to_end "$SCADLES_KAFKA" "$run.in" "$run.out" "$run.dlq" "$run.group"
predict_carries_origin "$SCADLES_KAFKA" "$run.orig" "$run.orig.out"
predict_end_to_end "$SCADLES_KAFKA" "$run.jin" "$run.jout" "$run.jdlq" "$run.jgroup" json
echo "ok: predictions equal eval's on a real broker"
