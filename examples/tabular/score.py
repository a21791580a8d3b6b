#!/usr/bin/env python3
"""score.py — scores a scadles checkpoint of the tabular example's MLP
(dense 8 -> 32, relu, dense 32 -> 4; examples/tabular/*.json) on a CSV file
of "f0,...,f7,label" lines, reading the file by the layout docs/MODEL.md
documents, with the standard library only. Prints "test accuracy: A (hits/n)"
like `scadles eval`.

usage: score.py CKPT EVAL.csv [--mean 50] [--std 20] [--near-ties EPS]

With --near-ties, also prints "near ties: K" on stderr: the records whose top
two scores are within EPS of each other. This scorer computes in double
precision and `scadles eval` in single precision with OpenBLAS's kernels, so
on such a record the two may pick different classes (and so count a hit
differently); everywhere else they agree.
"""
import argparse
import struct
import sys


def read_params(path):
    b = open(path, "rb").read()
    if b[:4] != b"SCCK":
        raise SystemExit("%s: not a scadles checkpoint" % path)
    off = 12 + 4 * 8 + 8                       # magic, version, flags; counters; batch
    c, h, w, loss, n_layers = struct.unpack_from("<iiiII", b, off)
    off += 20
    kinds = [struct.unpack_from("<Ii", b, off + 32 * i) for i in range(n_layers)]
    if (c * h * w, [k[0] for k in kinds]) != (8, [0, 3, 0]) or kinds[0][1] != 32 or kinds[2][1] != 4:
        raise SystemExit("%s: not the example's MLP 8-32-4" % path)
    off += 32 * n_layers
    nparams, = struct.unpack_from("<Q", b, off)
    return struct.unpack_from("<%df" % nparams, b, off + 8)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ckpt")
    ap.add_argument("eval_csv")
    ap.add_argument("--mean", type=float, default=50)
    ap.add_argument("--std", type=float, default=20)
    ap.add_argument("--near-ties", type=float, default=None, metavar="EPS")
    a = ap.parse_args()
    p = read_params(a.ckpt)
    w1, b1, w2, b2 = p[0:256], p[256:288], p[288:416], p[416:420]   # (32, 8) (32) (4, 32) (4)
    hits = n = ties = 0
    for line in open(a.eval_csv):
        v = line.strip().split(",")
        try:
            v = [float(t) for t in v]
        except ValueError:
            continue                                  # the header line
        x = [(t - a.mean) / a.std for t in v[:8]]
        hid = [max(0.0, sum(w1[o * 8 + k] * x[k] for k in range(8)) + b1[o]) for o in range(32)]
        z = [sum(w2[o * 32 + k] * hid[k] for k in range(32)) + b2[o] for o in range(4)]
        hits += z.index(max(z)) == int(v[8])
        n += 1
        top = sorted(z)[-2:]
        ties += a.near_ties is not None and top[1] - top[0] <= a.near_ties
    print("test accuracy: %.4f (%d/%d)" % (hits / n, hits, n))
    if a.near_ties is not None:
        print("near ties: %d" % ties, file=sys.stderr)


if __name__ == "__main__":
    main()
