#!/usr/bin/env python3
"""A small NumPy MLP trained with SGD, logging every step for `reprun exec`.

    reprun exec -- python3 examples/python/train_numpy.py
    reprun exec --no-pin -- python3 examples/python/train_numpy.py --order-from-set

The seed comes from $REPRUN_SEED (reprun pins it). With --order-from-set the sample order of each
epoch comes from iterating over a Python set of strings, which depends on string hash
randomization: identical runs need PYTHONHASHSEED pinned, which `reprun exec` does by default.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from reprun_log import StepLog  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--order-from-set", action="store_true")
    args = ap.parse_args()

    seed = int(os.environ.get("REPRUN_SEED", "0"))
    rng = np.random.default_rng(seed)
    n, f, h, c = 512, 10, 16, 3
    centres = rng.normal(0, 2, size=(c, f))
    y = rng.integers(0, c, size=n)
    x = (centres[y] + rng.normal(0, 1, size=(n, f))).astype(np.float32)

    w1 = (rng.normal(0, 1, size=(f, h)) / np.sqrt(f)).astype(np.float32)
    b1 = np.zeros(h, np.float32)
    w2 = (rng.normal(0, 1, size=(h, c)) / np.sqrt(h)).astype(np.float32)
    b2 = np.zeros(c, np.float32)
    lr = np.float32(0.1)

    steplog = StepLog()
    step = 0
    for epoch in range(args.epochs):
        if args.order_from_set:
            keys = {f"sample-{i}" for i in range(n)}
            order = np.array([int(k.split("-")[1]) for k in keys])
        else:
            order = rng.permutation(n)
        for start in range(0, n, args.batch):
            idx = order[start:start + args.batch]
            xb, yb = x[idx], y[idx]
            z1 = xb @ w1 + b1
            a1 = np.maximum(z1, 0)
            logits = a1 @ w2 + b2
            logits = logits - logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
            loss = float(-np.log(p[np.arange(len(yb)), yb]).mean())
            g = p.copy()
            g[np.arange(len(yb)), yb] -= 1
            g /= len(yb)
            gw2, gb2 = a1.T @ g, g.sum(0)
            ga1 = (g @ w2.T) * (z1 > 0)
            gw1, gb1 = xb.T @ ga1, ga1.sum(0)
            w1 -= lr * gw1
            b1 -= lr * gb1
            w2 -= lr * gw2
            b2 -= lr * gb2
            step += 1
            steplog.log(step, loss=loss, batch=idx,
                        tensors={"w1": w1, "b1": b1, "w2": w2, "b2": b2},
                        metrics={"epoch": epoch})
        print(f"epoch {epoch} loss {loss:.6f}")
    steplog.close()


if __name__ == "__main__":
    main()
