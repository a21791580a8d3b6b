#!/usr/bin/env bash
# trained_once.sh — trained_once.inc on the embedded broker: a clean bsp run
# of 2 workers trains each of 10,000 records once, and a worker killed with
# SIGKILL and restarted (printed: this broker refuses commits while its
# group rebalances, trained_once.inc).
. "$(dirname "$0")/distributed_common.inc"
pre=to
topics="to.a:1 to.b:1"
for c in clean kill; do
	topics="$topics to$c.grad:2 to$c.model:2 to$c.bcast:2 to$c.inject:1 to$c.ctl:1"
done
# shellcheck disable=SC2086
start_broker $topics
create_job() { :; }
ONCE_EMBEDDED=1
. "$(dirname "$0")/trained_once.inc"
