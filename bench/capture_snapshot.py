#!/usr/bin/env python3
"""The cost of `reprun exec --vary resume`'s boundary fingerprints on the mnist-mlp model: one
snapshot of the state a resume must restore (784-256-256-10 parameters, Adam's moments, the
generators, a DataLoader's generator, the batch), against one training step of the same model.

    python3 bench/capture_snapshot.py BUILD/python   ->  {"snapshot_ms": ..., "step_ms": ...}

Uses the build's reprun_capture as exec installs it; one thread; medians of 30 of each.
"""
import json
import os
import sys
import time

sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402

import reprun_capture  # noqa: E402

torch.set_num_threads(1)
reprun_capture._install(torch)
cap = reprun_capture._state
torch.manual_seed(0)
x = torch.randn(1024, 784)
y = torch.randint(0, 10, (1024,))
gen = torch.Generator().manual_seed(1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=128, shuffle=True,
                                     generator=gen)
model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
                            torch.nn.Linear(256, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
steps, snaps = [], []
for epoch in range(4):
    for xb, yb in loader:
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        steps.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        states = cap.ckpt.snapshot((xb,))
        snaps.append(time.perf_counter() - t0)
assert "optimizer 0 (Adam): state" in states and "batch" in states, sorted(states)
steps, snaps = sorted(steps[2:]), sorted(snaps[2:])
print(json.dumps({"snapshot_ms": snaps[len(snaps) // 2] * 1000, "step_ms": steps[len(steps) // 2] * 1000,
                  "states": len(states)}))
