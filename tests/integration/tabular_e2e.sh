#!/usr/bin/env bash
# tabular_e2e.sh — a user's own tabular data, end to end on the embedded
# broker: examples/tabular/gen.py's sensor data set published as CSV records
# to sensors.csv and JSON records to sensors.json, held-out set from a CSV
# file (eval.file, decoded by the sensors.csv decoder). A standalone worker
# and a 2-worker distributed job (bsp, 2 shards, 2 aggregators) each reach
# 0.85 test accuracy; prequential figures in the progress lines and the
# summaries agree with a recomputation from the confusion matrix; the
# worker's checkpoint evaluates to the worker's accuracy, from the CSV file
# and from a topic holding the same records (eval.topic); `model pull` ->
# `eval` gives exactly the accuracy of the job's final model (the last
# aggregator's checkpoint line), and examples/tabular/score.py, reading the
# file by docs/MODEL.md's layout, scores it the same. A 1-worker job of the
# model with batchnorm: `model pull` recomputes the statistics from the
# held-out set, `eval` gives the job's final accuracy exactly.
. "$(dirname "$0")/distributed_common.inc"
PREFIX= PARTS=2 KAFKA_EXTRA='{}'
. "$(dirname "$0")/tabular_common.inc"
start_broker sensors.csv:2 sensors.json:2 tabular.grad:2 tabular.model:2 tabular.inject:1 \
	tabular.ctl:1 tabularbn.grad:2 tabularbn.model:2 tabularbn.inject:1 tabularbn.ctl:1
tab_create_job() { :; } # created with the broker
tabular_run
echo ok
