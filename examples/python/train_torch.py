#!/usr/bin/env python3
"""A PyTorch MLP logging every step for `reprun exec`:

    reprun exec -- python3 examples/python/train_torch.py

Deterministic settings a PyTorch script needs on a CPU: a fixed seed (from $REPRUN_SEED),
torch.use_deterministic_algorithms(True), a fixed thread count (here 1: on Debian's PyTorch the
BLAS thread count changes the bits), and a data order drawn from a seeded generator.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from reprun_log import StepLog  # noqa: E402


def main():
    seed = int(os.environ.get("REPRUN_SEED", "0"))
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(seed)

    n, f, h, c = 512, 10, 32, 3
    centres = torch.randn(c, f, generator=gen) * 2
    y = torch.randint(0, c, (n,), generator=gen)
    x = centres[y] + torch.randn(n, f, generator=gen)

    model = torch.nn.Sequential(torch.nn.Linear(f, h), torch.nn.ReLU(), torch.nn.Linear(h, c))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    steplog = StepLog()
    step = 0
    for epoch in range(3):
        order = torch.randperm(n, generator=gen)
        for start in range(0, n, 32):
            idx = order[start:start + 32]
            opt.zero_grad()
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            step += 1
            steplog.log(step, loss=loss.item(), batch=idx, tensors=dict(model.named_parameters()))
        print(f"epoch {epoch} loss {loss.item():.6f}")
    steplog.close()


if __name__ == "__main__":
    main()
