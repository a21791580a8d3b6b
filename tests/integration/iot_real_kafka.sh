#!/usr/bin/env bash
# iot_real_kafka.sh — iot_e2e.sh on a real Apache Kafka (SCADLES_KAFKA=
# host:port, exit 77 without it): the same events, checks and figures, on
# topics named after this run (auto-created).
. "$(dirname "$0")/distributed_real.inc"
BUILD=${BUILD:-$(dirname "$SCADLES")}
PREFIX="$run." PARTS=1
. "$(dirname "$0")/iot_common.inc"
iot_run
echo ok
