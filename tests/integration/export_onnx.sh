#!/usr/bin/env bash
# export_onnx.sh — `scadles export --onnx` against onnxruntime: three models
# trained with `scadles train` on a Fashion-MNIST subset (an MLP with
# batchnorm and dropout, a CNN with conv2d / batchnorm / maxpool2d / tanh /
# flatten, a flat-input MLP with tanh and sigmoid, 1x1 convolutions on a flat
# input) are exported, and
# onnxruntime's probabilities on the raw test pixels equal `scadles eval
# --predictions` (max abs difference <= 1e-5, so argmax identical but at near
# ties: top two probabilities within 2e-5, counted and printed); the file
# passes onnx.checker; the normalization nodes are those of the chosen
# decoder settings; bad invocations exit 2 (1 for an unwritable file) and
# leave no file. onnxruntime, onnx and numpy come from PyPI into
# $BUILD/venv (scripts/pyvenv.sh).
set -u
BUILD=${BUILD:-build}
SCADLES=${SCADLES:-$BUILD/scadles}
FMNIST=/usr/share/datasets/fashion-mnist
tmp=$(mktemp -d /tmp/sc_export_onnx.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

PY=$(scripts/pyvenv.sh "$BUILD" onnxruntime numpy onnx) ||
	fail "could not install onnxruntime, numpy and onnx into $BUILD/venv (see above)"
[ -e "$FMNIST/t10k-images-idx3-ubyte.gz" ] ||
	fail "Fashion-MNIST is not installed (scripts/deps.sh installs dataset-fashion-mnist)"

# A subset of Fashion-MNIST as plain IDX files: 3000 training, 500 test samples.
mkdir -p "$tmp/data"
"$PY" - "$FMNIST" "$tmp/data" <<'PYEOF' || fail "could not write the IDX subset"
import gzip, struct, sys
src, dst = sys.argv[1], sys.argv[2]
for half, n in (("train", 3000), ("t10k", 500)):
    for kind, per in (("images-idx3", 784), ("labels-idx1", 1)):
        name = f"{half}-{kind}-ubyte"
        raw = gzip.open(f"{src}/{name}.gz").read()
        head = 16 if per > 1 else 8
        with open(f"{dst}/{name}", "wb") as f:
            f.write(raw[:4] + struct.pack(">I", n) + raw[8:head] + raw[head:head + n * per])
PYEOF

# model NAME INPUT LAYERS: writes $tmp/NAME.json
model() {
	cat >"$tmp/$1.json" <<JSON
{
  "model": {"input": $2, "layers": $3},
  "optim": {"lr": 0.05, "momentum": 0.9},
  "train": {"epochs": 2, "batch": 32, "seed": 11, "checkpoint": "$tmp/$1.ckpt",
            "progress_interval": 0},
  "data": {"source": "fashion-mnist", "dir": "$tmp/data"}
}
JSON
}
model mlp '[1, 28, 28]' '[{"type": "flatten"}, {"type": "dense", "units": 64},
  {"type": "batchnorm"}, {"type": "relu"}, {"type": "dropout", "rate": 0.3},
  {"type": "dense", "units": 10}]'
model cnn '[1, 28, 28]' '[{"type": "conv2d", "filters": 6, "kernel": 5, "padding": 2},
  {"type": "batchnorm"}, {"type": "relu"}, {"type": "maxpool2d", "size": 2},
  {"type": "conv2d", "filters": 8, "kernel": 3, "stride": 2}, {"type": "tanh"},
  {"type": "maxpool2d", "size": 2, "stride": 1}, {"type": "flatten"},
  {"type": "dense", "units": 10}]'
model flat '[784]' '[{"type": "dense", "units": 32}, {"type": "tanh"},
  {"type": "dense", "units": 32}, {"type": "sigmoid"}, {"type": "dense", "units": 10}]'
# 1x1 convolutions on a flat input: Reshape before each conv2d, Flatten before
# the dense layer and before the Softmax.
model adapt '[784]' '[{"type": "conv2d", "filters": 16, "kernel": 1}, {"type": "relu"},
  {"type": "dense", "units": 12}, {"type": "sigmoid"}, {"type": "conv2d", "filters": 10, "kernel": 1}]'

# compare NAME ONNX PREDICTIONS [prenormalized]: onnxruntime on the raw test
# pixels (or on pixels normalized here) against scadles' CSV.
compare() {
	"$PY" - "$tmp/data/t10k-images-idx3-ubyte" "$2" "$3" "${4:-raw}" "$1" <<'PYEOF'
import sys
import numpy as np
import onnx
import onnxruntime as ort
images, model_path, pred_path, mode, name = sys.argv[1:6]
onnx.checker.check_model(onnx.load(model_path), full_check=True)
raw = open(images, "rb").read()
n = int.from_bytes(raw[4:8], "big")
x = np.frombuffer(raw[16:16 + n * 784], dtype=np.uint8).astype(np.float32)
if mode == "prenormalized":  # what `scadles train` feeds the model
    x = (x * np.float32(1 / 255) - np.float32(0.286)) / np.float32(0.353)
sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
inp = sess.get_inputs()[0]
shape = [n] + [int(d) for d in inp.shape[1:]]
probs = sess.run(["probabilities"], {"input": x.reshape(shape)})[0]
rows = np.loadtxt(pred_path, delimiter=",", skiprows=1, dtype=np.float64)
assert rows.shape == (n, 2 + probs.shape[1]), (rows.shape, probs.shape)
ours = rows[:, 2:]
# Probabilities within TOL of each other, so the argmax is the same on every
# sample whose top two probabilities are more than 2 * TOL apart; closer ones
# (near ties) may go either way on another processor's kernels, and are
# counted, not failed.
TOL = 1e-5
same_row = probs.argmax(axis=1) == rows[:, 1].astype(int)
top2 = np.sort(ours, axis=1)[:, -2:]
tie = (top2[:, 1] - top2[:, 0]) <= 2 * TOL
same = int(same_row.sum())
ties = int((~same_row & tie).sum())
diff = float(np.abs(probs.astype(np.float64) - ours).max())
acc = float((probs.argmax(axis=1) == rows[:, 0].astype(int)).mean())
print(f"{name}: {n} samples, input {shape[1:]}, argmax identical {same}/{n} "
      f"({ties} others at near ties), max abs probability difference {diff:.3g}, "
      f"onnxruntime accuracy {acc:.4f}")
assert (ours.argmax(axis=1) == rows[:, 1].astype(int)).all(), "CSV argmax != predicted column"
sys.exit(0 if same + ties == n and diff <= TOL else 1)
PYEOF
}

# ops NAME ONNX: the graph's node types, in order, one line.
ops() {
	"$PY" -c 'import onnx,sys; m=onnx.load(sys.argv[1]); print(" ".join(n.op_type for n in m.graph.node))' "$1"
}

for m in mlp cnn flat adapt; do
	"$SCADLES" train -c "$tmp/$m.json" >"$tmp/$m.train" 2>"$tmp/$m.err" ||
		{ cat "$tmp/$m.err"; fail "$m: train exited $?"; }
	tail -n 1 "$tmp/$m.train"
	"$SCADLES" eval -c "$tmp/$m.json" --checkpoint "$tmp/$m.ckpt" \
		--predictions "$tmp/$m.csv" >"$tmp/$m.eval" 2>"$tmp/$m.err" ||
		{ cat "$tmp/$m.err"; fail "$m: eval exited $?"; }
	[ "$(cat "$tmp/$m.eval")" = "$(tail -n 1 "$tmp/$m.train")" ] || fail "$m: eval differs from train"
	[ "$(wc -l <"$tmp/$m.csv")" -eq 501 ] || fail "$m: predictions have $(wc -l <"$tmp/$m.csv") lines"
	"$SCADLES" export -c "$tmp/$m.json" --checkpoint "$tmp/$m.ckpt" --onnx "$tmp/$m.onnx" \
		>"$tmp/$m.out" 2>"$tmp/$m.err" || { cat "$tmp/$m.err"; fail "$m: export exited $?"; }
	cat "$tmp/$m.out" "$tmp/$m.err"
	grep -q "from \$.data (fashion-mnist): x' = (x \* 0.00392156886 - 0.286000013) / 0.352999985" \
		"$tmp/$m.err" || fail "$m: normalization not taken from data.*"
	compare "$m" "$tmp/$m.onnx" "$tmp/$m.csv" || fail "$m: onnxruntime disagrees with scadles"
done

# Every layer type became its operator; the normalization comes first.
[ "$(ops "$tmp/mlp.onnx")" = "Mul Add Flatten Gemm BatchNormalization Relu Identity Gemm Softmax" ] ||
	fail "mlp graph: $(ops "$tmp/mlp.onnx")"
[ "$(ops "$tmp/cnn.onnx")" = "Mul Add Conv BatchNormalization Relu MaxPool Conv Tanh MaxPool Flatten Gemm Softmax" ] ||
	fail "cnn graph: $(ops "$tmp/cnn.onnx")"
[ "$(ops "$tmp/flat.onnx")" = "Mul Add Gemm Tanh Gemm Sigmoid Gemm Softmax" ] ||
	fail "flat graph: $(ops "$tmp/flat.onnx")"
[ "$(ops "$tmp/adapt.onnx")" = "Mul Add Reshape Conv Relu Flatten Gemm Sigmoid Reshape Conv Flatten Softmax" ] ||
	fail "adapt graph: $(ops "$tmp/adapt.onnx")"
grep -q 'input (N, 784), output probabilities (N, 10)' "$tmp/flat.out" || fail "flat: $(cat "$tmp/flat.out")"
"$SCADLES" export --help | grep -q 'ONNX file (opset 13, IR version 7)' || fail "export --help"

# Without normalization nodes the model wants normalized input: raw pixels
# then disagree, normalized ones agree.
"$SCADLES" export -c "$tmp/cnn.json" --checkpoint "$tmp/cnn.ckpt" --onnx "$tmp/none.onnx" \
	--normalize none >/dev/null 2>&1 || fail "--normalize none failed"
[ "$(ops "$tmp/none.onnx")" = "Conv BatchNormalization Relu MaxPool Conv Tanh MaxPool Flatten Gemm Softmax" ] ||
	fail "none graph: $(ops "$tmp/none.onnx")"
compare none "$tmp/none.onnx" "$tmp/cnn.csv" >/dev/null && fail "raw pixels agree without normalization"
compare none "$tmp/none.onnx" "$tmp/cnn.csv" prenormalized || fail "--normalize none: normalized input disagrees"

# The decoder keys of source.topics (auto picks the first element) and
# explicit numbers give the same normalization as data.*.
"$PY" -c 'import json,sys; c=json.load(open(sys.argv[1]))
c["source"] = {"topics": [{"topic": "shirts", "format": "csv", "scale": 0.00392156863, "mean": 0.286, "std": 0.353}]}
json.dump(c, open(sys.argv[2], "w"))' "$tmp/mlp.json" "$tmp/topic.json" || fail "could not write topic.json"
"$SCADLES" export -c "$tmp/topic.json" --checkpoint "$tmp/mlp.ckpt" --onnx "$tmp/topic.onnx" \
	>/dev/null 2>"$tmp/topic.err" || { cat "$tmp/topic.err"; fail "topic export failed"; }
grep -q 'from \$.source.topics\[0\] (shirts)' "$tmp/topic.err" || fail "auto: $(cat "$tmp/topic.err")"
compare topic "$tmp/topic.onnx" "$tmp/mlp.csv" || fail "topic normalization disagrees"
"$SCADLES" export -c "$tmp/mlp.json" --checkpoint "$tmp/mlp.ckpt" --onnx "$tmp/nums.onnx" \
	--normalize 0.00392156863,0.286,0.353 >/dev/null 2>&1 || fail "--normalize S,M,D failed"
compare nums "$tmp/nums.onnx" "$tmp/mlp.csv" || fail "explicit normalization disagrees"
"$PY" -c 'import onnx,sys; m=onnx.load(sys.argv[1]); d={p.key: p.value for p in m.metadata_props}
assert m.ir_version == 7 and [o.version for o in m.opset_import] == [13], m
assert d["scadles.normalization.mean"] == "0.286000013", d' "$tmp/nums.onnx" ||
	fail "IR version, opset or metadata wrong"

# Bad invocations: exit 2 with a message, no file written.
expect() { # CODE PATTERN ARGS...
	local code=$1 pat=$2
	shift 2
	"$SCADLES" export "$@" >/dev/null 2>"$tmp/bad.err"
	local rc=$?
	[ "$rc" -eq "$code" ] || fail "export $*: exit $rc, expected $code: $(cat "$tmp/bad.err")"
	grep -q -- "$pat" "$tmp/bad.err" || fail "export $*: message '$(cat "$tmp/bad.err")' lacks '$pat'"
}
expect 2 '--onnx OUT is required' -c "$tmp/mlp.json" --checkpoint "$tmp/mlp.ckpt"
expect 2 '\$.source.topics is empty' -c "$tmp/mlp.json" --checkpoint "$tmp/mlp.ckpt" \
	--onnx "$tmp/bad.onnx" --normalize topic
expect 2 'has no element of that topic' -c "$tmp/topic.json" --checkpoint "$tmp/mlp.ckpt" \
	--onnx "$tmp/bad.onnx" --normalize topic:pants
expect 2 'expected auto, topic' -c "$tmp/mlp.json" --checkpoint "$tmp/mlp.ckpt" \
	--onnx "$tmp/bad.onnx" --normalize 1,2
expect 2 'std must be non-zero' -c "$tmp/mlp.json" --checkpoint "$tmp/mlp.ckpt" \
	--onnx "$tmp/bad.onnx" --normalize 1,0,0
expect 2 "$tmp/cnn.ckpt" -c "$tmp/mlp.json" --checkpoint "$tmp/cnn.ckpt" --onnx "$tmp/bad.onnx"
expect 1 "$tmp/nope/x.onnx: cannot create" -c "$tmp/mlp.json" --checkpoint "$tmp/mlp.ckpt" \
	--onnx "$tmp/nope/x.onnx"
[ -e "$tmp/bad.onnx" ] && fail "a failed export left $tmp/bad.onnx"
"$SCADLES" eval -c "$tmp/mlp.json" --checkpoint "$tmp/mlp.ckpt" --predictions "$tmp/nope/p.csv" \
	>/dev/null 2>"$tmp/bad.err"
[ $? -eq 1 ] && grep -q "nope/p.csv: cannot create" "$tmp/bad.err" ||
	fail "eval --predictions to a missing folder: $(cat "$tmp/bad.err")"
ls "$tmp" | grep -q '\.tmp\.' && fail "temporary file left behind"
echo "export_onnx: ok"
