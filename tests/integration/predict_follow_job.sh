#!/usr/bin/env bash
# `scadles predict --follow-job` next to a running distributed job on the
# embedded broker (predict_follow.inc).
. "$(dirname "$0")/distributed_common.inc"
. "$(dirname "$0")/predict_follow.inc"

start_broker pf.wk.0:2 pf.wk.1:2 dj.grad:2 dj.model:2 dj.bcast:2 dj.inject:1 dj.ctl:1 pf.live:2
follow_job "$bs" pf '{}'
echo "ok: model_version advanced during the job, every record predicted and committed"
