#!/usr/bin/env bash
# Membership on a real Kafka: see distributed_membership.inc (the job's
# topics are created by the aggregator, the data topics by the feed).
. "$(dirname "$0")/distributed_real.inc"
membership_topics="${run}mb"
membership_job="${run}mj"
. "$(dirname "$0")/distributed_membership.inc"
echo "distributed_real_membership: ok"
