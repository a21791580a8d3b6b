#!/usr/bin/env bash
# Membership on the embedded broker: see distributed_membership.inc.
. "$(dirname "$0")/distributed_common.inc"
start_broker mb.0:1 mb.1:1 mb.2:1 mj.grad:2 mj.model:2 mj.bcast:2 mj.inject:1 mj.ctl:1
membership_topics=mb
membership_job=mj
. "$(dirname "$0")/distributed_membership.inc"
echo "distributed_membership: ok"
