#!/usr/bin/python3
"""torch_compare.py — PyTorch (CPU) training throughput for the same models,
batches and thread counts as bench_nn, printed in bench_nn's line format.

Each line: "nn model=<mlp|cnn> batch=<B> threads=<T> samples_per_s=<x>
step_ms=<x> gflops=<x>" where a step is forward + loss + backward + SGD
update (momentum 0.9), on random inputs of shape (B, 1, 28, 28); the best
of 5 timing windows."""
import argparse
import sys
import time

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("torch_compare: python3-torch is not installed (apt-get install -y python3-torch)",
          file=sys.stderr)
    sys.exit(77)


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                         nn.ReLU(), nn.Linear(128, 10))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
                         nn.Linear(128, 10))


# Multiply-adds of one sample's training step (forward, weight and input
# gradients; no input gradient for the first layer), as bench_nn counts them.
MACS = {
    "mlp": 2 * (784 * 256 + 256 * 128 + 128 * 10) + 256 * 128 + 128 * 10,
    "cnn": 2 * (32 * 9 * 784 + 64 * 288 * 196 + 3136 * 128 + 128 * 10)
    + 64 * 288 * 196 + 3136 * 128 + 128 * 10,
}


def bench(name, batch, threads, seconds):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = mlp() if name == "mlp" else cnn()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(2):
        step()
    # Best of 5 windows: on a shared machine the least disturbed one.
    best = float("inf")
    for _ in range(5):
        steps = 0
        t0 = time.perf_counter()
        while True:
            step()
            steps += 1
            dt = time.perf_counter() - t0
            if dt >= seconds / 5:
                break
        best = min(best, dt / steps)
    sps = batch / best
    gflops = sps * MACS[name] * 2 / 1e9
    print("nn model=%s batch=%d threads=%d samples_per_s=%.1f step_ms=%.3f gflops=%.2f" %
          (name, batch, threads, sps, 1e3 * best, gflops), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=1.0, help="time per configuration")
    ap.add_argument("--models", default="mlp,cnn")
    ap.add_argument("--batches", default="16,64,256")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--serve", action="store_true",
                    help="read 'model batch threads' lines from stdin, answer each with "
                    "one result line (lets a driver interleave runs with its own)")
    a = ap.parse_args()
    if a.serve:
        for line in sys.stdin:
            f = line.split()
            if len(f) != 3 or f[0] not in MACS:
                print("error: expected 'model batch threads', got %r" % line.strip(),
                      flush=True)
                continue
            bench(f[0], int(f[1]), int(f[2]), a.seconds)
        return
    for name in a.models.split(","):
        for threads in [int(t) for t in a.threads.split(",")]:
            for batch in [int(b) for b in a.batches.split(",")]:
                bench(name, batch, threads, a.seconds)


if __name__ == "__main__":
    main()
