#!/usr/bin/env python3
"""PyTorch peer for the trainer benchmark: the mnist-mlp workload (784-256-256-10 ReLU, softmax
cross-entropy, SGD lr 0.05 momentum 0.9, batch 128, one epoch) on the IDX files of make_data.py,
standardized per feature with training-set statistics, as reprun does.

    torch_mlp.py DATA_DIR THREADS best|default [cpu|cuda]

best: torch.set_num_threads(THREADS), BLAS threads limited with threadpoolctl where installed (the
caller sets OPENBLAS_NUM_THREADS and MKL_NUM_THREADS to THREADS too: torch.set_num_threads does not
reach Debian's OpenBLAS), OMP_WAIT_POLICY (set by the caller) PASSIVE. default: PyTorch as it comes. Prints one JSON line: epoch seconds
(the training loop only, like reprun's steps_per_second), the loop's CPU time (the process's, all
threads; on a busy machine steadier than the epoch time, which also counts the waits for a core), the
mean loss of the last 50 steps. cuda: the model and the data on the first GPU (PyTorch eager, its
default cuBLAS and TF32 settings), the loop timed after a synchronize (the CPU time is the host's).
"""
import json
import sys
import time

import numpy as np
import torch


def load(data_dir):
    with open(f"{data_dir}/images.idx", "rb") as f:
        f.read(16)
        x = np.frombuffer(f.read(), dtype=np.uint8).reshape(-1, 784).astype(np.float32)
    with open(f"{data_dir}/labels.idx", "rb") as f:
        f.read(8)
        y = np.frombuffer(f.read(), dtype=np.uint8).astype(np.int64)
    mean = x.astype(np.float64).mean(0)
    std = x.astype(np.float64).std(0)
    std[std < 1e-12] = 1.0
    x = ((x - mean.astype(np.float32)) * (1.0 / std).astype(np.float32)).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y)


def main():
    data_dir, threads, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    device = sys.argv[4] if len(sys.argv) > 4 else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_mlp.py: cuda asked for, but torch.cuda.is_available() is False")
    limiter = None
    if mode == "best":
        torch.set_num_threads(threads)
        try:
            from threadpoolctl import threadpool_limits

            limiter = threadpool_limits(limits=threads)
        except ImportError:
            pass
    torch.manual_seed(1)
    x, y = load(data_dir)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                torch.nn.ReLU(), torch.nn.Linear(256, 10))
    if device == "cuda":
        x, y, model = x.cuda(), y.cuda(), model.cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    order = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(1)).to(x.device)
    if device == "cuda":  # warm-up outside the timed loop: CUDA context, cuBLAS handles, kernels
        model(x[order[:128]]).sum().backward()
        model.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
    losses = []
    t0, cpu0 = time.perf_counter(), time.process_time()
    for start in range(0, x.shape[0], 128):
        idx = order[start:start + 128]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    if device == "cuda":
        torch.cuda.synchronize()
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - cpu0
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "steps": len(losses),
                      "final_loss": float(np.mean(losses[-50:])),
                      "threads": torch.get_num_threads(), "mode": mode, "device": device,
                      "torch": torch.__version__}))
    del limiter


if __name__ == "__main__":
    main()
