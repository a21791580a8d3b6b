#!/usr/bin/env bash
# `scadles predict --follow-job` next to a running distributed job on a real
# Apache Kafka broker (SCADLES_KAFKA; predict_follow.inc), topics and job
# named after this run.
. "$(dirname "$0")/distributed_real.inc"
. "$(dirname "$0")/predict_follow.inc"

create_job=real_create_job
follow_job "$bs" "$run" "{\"job\": {\"name\": \"$run\"}, \"kafka\": {\"bootstrap.servers\": \"$bs\"}}"
echo "ok on a real broker: model_version advanced during the job"
