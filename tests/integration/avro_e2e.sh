#!/usr/bin/env bash
# avro_e2e.sh — Avro events with a Schema Registry end to end on the
# embedded broker (tests/integration/avro_common.inc says what is checked).
. "$(dirname "$0")/worker_common.inc"
BUILD=${BUILD:-$(dirname "$SCADLES")}
PREFIX= PARTS=4
. "$(dirname "$0")/avro_common.inc"
start_broker machines.avro:4 machines.avro.dlq:1 machines.eval.avro:4 machines.pred:2 machines.pred.avro:2
avro_run
echo ok
