#!/usr/bin/env python3
"""gen.py — a synthetic tabular classification problem for the tabular example.

Machine states from 8 sensor readings: 4 classes (idle, normal, overload,
fault), each a Gaussian cloud around its own mean vector (entries in
[30, 70], standard deviation 12), so the classes overlap and no model gets
every sample right. Deterministic for a seed.

Writes to OUTDIR:
  train.csv    training records, half of them, "f0,...,f7,label" lines
  train.jsonl  the other half as {"features": [...], "label": k} lines
  eval.csv     held-out records with a header line (the test set)

usage: gen.py OUTDIR [--train N] [--eval N] [--seed S]
"""
import argparse
import json
import os
import random

FEATURES = 8
CLASSES = 4
SD = 12.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--train", type=int, default=20000)
    ap.add_argument("--eval", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    means = [[rng.uniform(30, 70) for _ in range(FEATURES)] for _ in range(CLASSES)]

    def sample():
        k = rng.randrange(CLASSES)
        return [rng.gauss(means[k][j], SD) for j in range(FEATURES)], k

    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "train.csv"), "w") as fc, \
            open(os.path.join(a.outdir, "train.jsonl"), "w") as fj:
        for i in range(a.train):
            x, k = sample()
            if i % 2 == 0:
                fc.write(",".join("%.3f" % v for v in x) + ",%d\n" % k)
            else:
                fj.write(json.dumps({"features": [round(v, 3) for v in x], "label": k}) + "\n")
    with open(os.path.join(a.outdir, "eval.csv"), "w") as fe:
        fe.write(",".join("f%d" % j for j in range(FEATURES)) + ",label\n")
        for _ in range(a.eval):
            x, k = sample()
            fe.write(",".join("%.3f" % v for v in x) + ",%d\n" % k)


if __name__ == "__main__":
    main()
