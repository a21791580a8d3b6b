#!/usr/bin/env bash
# trained_once_real_kafka.sh — trained_once.inc on a real Apache Kafka
# (SCADLES_KAFKA=host:port, exit 77 without it): the data topics named after
# this run (auto-created, one partition each), each case's job topics
# created by the aggregator.
. "$(dirname "$0")/distributed_real.inc"
pre=$run
create_job() { real_create_job "$1"; }
. "$(dirname "$0")/trained_once.inc"
