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
# held-out set, `eval` gives the job's final accuracy exactly. The
# worker's model exported with `scadles export --onnx`: onnxruntime on the
# raw features of eval.csv (the export normalizes them like the sensors.csv
# decoder) gives `scadles eval --predictions`'s classes and probabilities
# (max abs difference <= 1e-5; argmax identical but at near ties, top two
# within 2e-5).
. "$(dirname "$0")/distributed_common.inc"
PREFIX= PARTS=2 KAFKA_EXTRA='{}'
. "$(dirname "$0")/tabular_common.inc"
start_broker sensors.csv:2 sensors.json:2 tabular.grad:2 tabular.model:2 tabular.bcast:2 tabular.inject:1 \
	tabular.ctl:1 tabularbn.grad:2 tabularbn.model:2 tabularbn.bcast:2 tabularbn.inject:1 tabularbn.ctl:1
tab_create_job() { :; } # created with the broker
tabular_run

PY=$(scripts/pyvenv.sh "$BUILD" onnxruntime numpy onnx) ||
	fail "could not install onnxruntime, numpy and onnx into $BUILD/venv"
"$SCADLES" export -c "$tmp/worker.json" --checkpoint "$tmp/worker.ckpt" --onnx "$tmp/worker.onnx" \
	2>"$tmp/export.err" || fail "export exited $?: $(cat "$tmp/export.err")"
"$SCADLES" eval -c "$tmp/worker.json" --checkpoint "$tmp/worker.ckpt" --predictions "$tmp/preds.csv" \
	>/dev/null 2>&1 || fail "eval --predictions exited $?"
"$PY" - "$data/eval.csv" "$tmp/worker.onnx" "$tmp/preds.csv" <<'PYEOF' || fail "onnxruntime disagrees with scadles"
import sys
import numpy as np
import onnxruntime as ort
ev, model, preds = sys.argv[1:4]
rows = [line.split(",") for line in open(ev).read().splitlines()[1:] if line]
x = np.array([[float(v) for v in r[:8]] for r in rows], dtype=np.float32)  # raw features
s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
out = s.run(None, {s.get_inputs()[0].name: x})[0]
p = np.loadtxt(preds, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
TOL = 1e-5  # probabilities within TOL: the argmax may differ only at near ties
if out.shape != p[:, 2:].shape:
    sys.exit(f"onnxruntime gave {out.shape}, scadles {p[:, 2:].shape}")
top2 = np.sort(p[:, 2:], axis=1)[:, -2:]
other = out.argmax(1) != p[:, 1].astype(int)
ties = int((other & ((top2[:, 1] - top2[:, 0]) <= 2 * TOL)).sum())
diff = float(np.abs(out - p[:, 2:]).max())
print(f"tabular ONNX: {len(x)} rows, argmax differs on {int(other.sum())} "
      f"({ties} at near ties), max abs difference {diff:.3g}")
sys.exit(0 if int(other.sum()) == ties and diff <= TOL else 1)
PYEOF
echo ok
