#!/usr/bin/env bash
# worker_no_aggregator_real_kafka.sh — worker_no_aggregator.sh on a real
# Apache Kafka (SCADLES_KAFKA=host:port, exit 77 without it): the whole
# process's CPU time while it waits for a model stays under 3% of a core
# (about 1% measured, half of it librdkafka's timers) and its threads wake
# at most 150 times a second; see that script.
NA_REAL=1 exec bash "$(dirname "$0")/worker_no_aggregator.sh"
