#!/usr/bin/env bash
# iot_e2e.sh — named-field JSON events end to end on the embedded broker:
# examples/iot's machine events (device id hashed, a categorical kind, six
# sensors with nulls and absences, a string status label) trained on by a
# standalone worker from examples/iot/worker.json. Checks: every good event
# trained, 3 malformed events dead-lettered with their reason (not_numeric,
# label_range, wrong_type), test accuracy >= 0.82, the summary and eval's
# metrics name the classes, eval = the worker's accuracy, the ONNX export
# in onnxruntime on the encoded features gives scadles' predictions
# (examples/iot/compare.py, which encodes the events itself and prints
# scikit-learn's accuracy on the same features: scadles within 3 points of
# its MLP), and `scadles predict` names each prediction's class and true
# class, hitting as often as eval.
. "$(dirname "$0")/worker_common.inc"
BUILD=${BUILD:-$(dirname "$SCADLES")}
PREFIX= PARTS=4
. "$(dirname "$0")/iot_common.inc"
start_broker machines.json:4 machines.dlq:1 machines.eval:4 machines.pred:2
iot_run
echo ok
