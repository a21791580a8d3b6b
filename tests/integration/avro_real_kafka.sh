#!/usr/bin/env bash
# avro_real_kafka.sh — avro_e2e.sh on a real Apache Kafka (SCADLES_KAFKA=
# host:port, exit 77 without it): the same records and checks, on topics
# named after this run (auto-created).
. "$(dirname "$0")/distributed_real.inc"
BUILD=${BUILD:-$(dirname "$SCADLES")}
PREFIX="$run." PARTS=1
. "$(dirname "$0")/avro_common.inc"
avro_run
echo ok
