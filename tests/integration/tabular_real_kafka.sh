#!/usr/bin/env bash
# tabular_real_kafka.sh — tabular_e2e.sh on a real Apache Kafka
# (SCADLES_KAFKA=host:port, exit 77 without it): the tabular data set on two
# one-partition topics named after this run (auto-created), the job's topics
# created by the aggregator, the workers' group assigned round-robin so each
# worker of the job reads one topic; the same figures checked.
. "$(dirname "$0")/distributed_real.inc"
PREFIX="$run." PARTS=1 KAFKA_EXTRA='{"partition.assignment.strategy": "roundrobin"}'
. "$(dirname "$0")/tabular_common.inc"
tab_create_job() { real_create_job "$1"; }
tab_conf examples/tabular/job.json "$tmp/create.json" none.ckpt
tab_create_job "$tmp/create.json"
tabular_run
echo ok
