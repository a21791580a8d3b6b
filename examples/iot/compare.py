#!/usr/bin/env python3
"""compare.py — scadles' held-out accuracy on the iot events next to scikit-learn's.

Reads the worker configuration's streams.fields and streams.labels and
encodes the events itself, by the rules docs/STREAMS.md gives (an
implementation independent of scadles' decoder), then:

  - scadles: the accuracy of `scadles eval --predictions` (PREDS, the
    held-out events in file order), checked against the labels encoded here;
  - scikit-learn: an MLP of the same shape (one hidden layer of the model's
    units, relu) and a logistic regression, trained on TRAIN's encoded
    features (several passes), scored on EVAL's;
  - ONNX (--onnx): the exported model in onnxruntime on the encoded features
    before standardization (what docs/EXPORT.md says the input is): its
    argmax against scadles' predictions, and the largest probability
    difference.

usage: compare.py CONFIG TRAIN.jsonl EVAL.jsonl PREDS.csv [--onnx MODEL.onnx]
Needs numpy and scikit-learn (and onnxruntime for --onnx).
"""
import argparse
import json
import re
import sys

import numpy as np

FNV_OFFSET, FNV_PRIME, MASK = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def fnv1a(b):
    h = FNV_OFFSET
    for c in b:
        h = ((h ^ c) * FNV_PRIME) & MASK
    return h


def steps(path):
    if not path.startswith("$"):
        path = "$." + path
    return [(m[0] or None, int(m[1]) if m[1] else None)
            for m in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path[1:])]


def value_at(obj, path):
    for name, index in steps(path):
        if name is not None:
            if not isinstance(obj, dict) or name not in obj:
                return False, None
            obj = obj[name]
        else:
            if not isinstance(obj, list) or index >= len(obj):
                return False, None
            obj = obj[index]
    return True, obj


def text_of(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    return json.dumps(v)


class Encoder:
    def __init__(self, conf):
        st = conf["streams"]
        self.fields = st["fields"]
        self.labels = st.get("labels", [])
        self.label_path = st.get("label_path", "$.label")
        self.width = 0
        for f in self.fields:
            kind = f.get("type", "numeric")
            f["_kind"] = kind
            f["_missing"] = f.get("missing", "zero" if kind in ("categorical", "hashed") else "mean")
            f["_vocab"] = {text_of(v): i for i, v in enumerate(f.get("vocab", []))}
            f["_width"] = {"categorical": len(f.get("vocab", [])) + 1,
                           "hashed": f.get("buckets", 0)}.get(kind, 2 if f.get("indicator") else 1)
            self.width += f["_width"]

    def encode(self, rec, standardize):
        """Features (float32) and label index; None for a record scadles refuses."""
        out = np.zeros(self.width, dtype=np.float32)
        at = 0
        for f in self.fields:
            found, v = value_at(rec, f["path"])
            missing = not found or v is None
            kind, rule = f["_kind"], f["_missing"]
            if missing and rule == "error":
                return None
            if kind in ("categorical", "hashed"):
                if not missing:
                    t = text_of(v)
                    if kind == "categorical":
                        out[at + f["_vocab"].get(t, f["_width"] - 1)] = 1
                    else:
                        out[at + fnv1a(t.encode()) % f["buckets"]] = 1
            else:
                mean, std = f.get("mean", 0.0), f.get("std", 1.0)
                if missing:
                    raw = {"mean": mean, "constant": f.get("fill", 0.0)}.get(rule, 0.0)
                elif isinstance(v, bool):
                    raw = float(v)
                else:
                    raw = float(v)
                x = np.float32(raw)
                if standardize:  # the decoder's float arithmetic: x * (1 / std) + (-mean / std)
                    x = x * np.float32(1.0 / std) + np.float32(-mean / std)
                out[at] = x
                if f.get("indicator"):
                    out[at + 1] = 1.0 if missing else 0.0
            at += f["_width"]
        found, lab = value_at(rec, self.label_path)
        if not found:
            return None
        label = self.labels.index(lab) if isinstance(lab, str) else int(lab)
        return out, label

    def load(self, path, standardize):
        xs, ys = [], []
        for line in open(path):
            if line.strip():
                r = self.encode(json.loads(line), standardize)
                if r is not None:
                    xs.append(r[0])
                    ys.append(r[1])
        return np.array(xs), np.array(ys)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config")
    ap.add_argument("train")
    ap.add_argument("eval")
    ap.add_argument("preds")
    ap.add_argument("--onnx")
    a = ap.parse_args()
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    conf = json.load(open(a.config))
    enc = Encoder(conf)
    xtr, ytr = enc.load(a.train, True)
    xev, yev = enc.load(a.eval, True)
    p = np.loadtxt(a.preds, delimiter=",", skiprows=1, ndmin=2)
    if len(p) != len(yev) or (p[:, 0].astype(int) != yev).any():
        sys.exit(f"compare.py: {a.preds} holds {len(p)} rows whose labels are not the "
                 f"{len(yev)} held-out events' labels encoded here")
    ours = float((p[:, 1].astype(int) == yev).mean())
    hidden = [l["units"] for l in conf["model"]["layers"] if l["type"] == "dense"][:-1]
    mlp = MLPClassifier(hidden_layer_sizes=tuple(hidden), random_state=1, max_iter=300,
                        early_stopping=True).fit(xtr, ytr)
    lr = LogisticRegression(max_iter=2000).fit(xtr, ytr)
    acc_mlp = float(mlp.score(xev, yev))
    acc_lr = float(lr.score(xev, yev))
    print(f"held-out events: {len(yev)}; training events: {len(ytr)}; "
          f"features: {enc.width} from {len(enc.fields)} fields")
    print(f"scadles (one online pass)                 {ours:.4f}")
    print(f"scikit-learn MLPClassifier{tuple(hidden)} (adam)  {acc_mlp:.4f}  "
          f"(scadles {100 * (ours - acc_mlp):+.2f} points)")
    print(f"scikit-learn LogisticRegression           {acc_lr:.4f}")
    if a.onnx:
        import onnxruntime as ort
        raw, _ = enc.load(a.eval, False)
        s = ort.InferenceSession(a.onnx, providers=["CPUExecutionProvider"])
        out = s.run(None, {s.get_inputs()[0].name: raw})[0]
        same = int((out.argmax(1) == p[:, 1].astype(int)).sum())
        diff = float(np.abs(out - p[:, 2:]).max())
        print(f"onnxruntime on the encoded features: argmax equal to scadles' on {same}/{len(p)}, "
              f"max abs probability difference {diff:.3g}")
        if same != len(p) or diff > 1e-5:
            sys.exit("compare.py: the ONNX model disagrees with scadles")


if __name__ == "__main__":
    main()
