#!/usr/bin/env bash
# worker_no_aggregator_real_kafka.sh — worker_no_aggregator.sh on a real
# Apache Kafka (SCADLES_KAFKA=host:port, exit 77 without it): the whole
# process's CPU time while it waits for a model stays under 1% of a core.
NA_REAL=1 exec bash "$(dirname "$0")/worker_no_aggregator.sh"
