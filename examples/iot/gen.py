#!/usr/bin/env python3
"""gen.py — machine events with named fields, strings and nulls, for the iot example.

Each event is one JSON object as a plant's machines would send it:

  {"device": "m-0173", "kind": "pump", "temp": 71.2, "vib": null,
   "pressure": 4.1, "current": 12.9, "rpm": 1480, "humidity": 41.0,
   "status": "overheat", "ts": 1733300000123}

- device: one of 300 machine ids (no signal of its own: a hashed feature);
- kind: pump, fan, compressor or valve (categorical; a few events carry a
  kind that is not in the list the model is configured with);
- six sensors, each null in about 4% of the events and absent from about
  2% (a sensor that dropped off the message);
- status, the label: ok, overheat, bearing_wear or leak. It follows from the
  sensors through rules that depend on the kind (a hot pump is not a hot
  fan), with label noise, so no model gets every event right.

Writes to OUTDIR train.jsonl and eval.jsonl (held out), one event per
line. The same seed gives the same files.

usage: gen.py OUTDIR [--train N] [--eval N] [--seed S]
"""
import argparse
import json
import os
import random

KINDS = ["pump", "fan", "compressor", "valve"]
RARE_KINDS = ["mixer", "conveyor"]  # not in the model's vocabulary
STATUS = ["ok", "overheat", "bearing_wear", "leak"]
SENSORS = ["temp", "vib", "pressure", "current", "rpm", "humidity"]
# per kind: normal operating (mean, sd) of each sensor
NORMAL = {
    "pump": {"temp": (60, 6), "vib": (2.0, 0.5), "pressure": (5.0, 0.6), "current": (12, 1.5),
             "rpm": (1450, 60), "humidity": (45, 10)},
    "fan": {"temp": (45, 5), "vib": (1.2, 0.3), "pressure": (1.0, 0.2), "current": (4, 0.8),
            "rpm": (900, 80), "humidity": (45, 10)},
    "compressor": {"temp": (75, 7), "vib": (3.0, 0.6), "pressure": (8.0, 0.8),
                   "current": (20, 2.5), "rpm": (2900, 120), "humidity": (45, 10)},
    "valve": {"temp": (40, 5), "vib": (0.5, 0.2), "pressure": (6.0, 0.7), "current": (1, 0.3),
              "rpm": (0, 1), "humidity": (45, 10)},
}
# what a fault does to the sensors, in standard deviations of the normal range
EFFECT = {
    "overheat": {"temp": 3.0, "current": 1.5},
    "bearing_wear": {"vib": 3.0, "rpm": -1.5, "temp": 0.8},
    "leak": {"pressure": -3.0, "humidity": 1.5},
}


def event(rng, devices):
    device = rng.choice(devices)
    kind = device[1] if rng.random() > 0.01 else rng.choice(RARE_KINDS)
    base = NORMAL.get(kind, NORMAL["pump"])
    status = rng.choices(STATUS, weights=[0.55, 0.15, 0.15, 0.15])[0]
    truth = status
    if rng.random() < 0.04:  # label noise
        status = rng.choice(STATUS)
    e = {"device": device[0], "kind": kind}
    for s in SENSORS:
        mean, sd = base[s]
        v = rng.gauss(mean, sd) + EFFECT.get(truth, {}).get(s, 0.0) * sd
        r = rng.random()
        if r < 0.02:
            continue  # absent
        e[s] = None if r < 0.06 else round(v, 2 if s != "rpm" else 0)
    e["status"] = status
    e["ts"] = 1733300000000 + rng.randrange(10**9)
    return e


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--train", type=int, default=60000)
    ap.add_argument("--eval", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    devices = [("m-%04d" % i, rng.choice(KINDS)) for i in range(300)]
    os.makedirs(a.outdir, exist_ok=True)
    for name, n in (("train.jsonl", a.train), ("eval.jsonl", a.eval)):
        with open(os.path.join(a.outdir, name), "w") as f:
            for _ in range(n):
                f.write(json.dumps(event(rng, devices), separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
