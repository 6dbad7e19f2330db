# reprun exec on a data-parallel program started by torchrun (torch 2.x on a lent GPU machine): two
# ranks, the model on the GPU with NCCL when there are two GPUs, else gloo on the CPU beside the
# one GPU. torchrun's agent imports torch but has no process group: it is not a rank and records
# nothing. A rank that sleeps before its first step (rank 0 in run-1, rank 1 in run-2) changes
# nothing (PASS, both ranks compared); OMP_NUM_THREADS varied on CPU batches centred on the mean of
# a 2048x512 table (a reduction torch splits by thread on every machine, where a matrix product's
# dependence on the thread count is its BLAS kernel's) fails naming a rank and aten.mean. Skipped (exit 125) without an NVIDIA GPU and a python3 whose torch sees it.
source "$(dirname "$0")/../e2e/lib.sh"
nvidia-smi -L >/dev/null 2>&1 || skip "no NVIDIA GPU (nvidia-smi -L failed or is not installed)"
PY=$(python_with_cuda_torch) || skip "no python3 with a torch where torch.cuda.is_available() is True"
"$PY" -c "import torch.distributed.run" 2>/dev/null || skip "no torch.distributed.run (torchrun)"
PORT=$("$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
own_tmpdir # torchrun leaves a folder in TMPDIR at each launch

cat >ddp.py <<'PYSRC'
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
nccl = torch.cuda.device_count() >= world and os.environ.get("WIDE") != "1"
dist.init_process_group("nccl" if nccl else "gloo")
dev = torch.device(f"cuda:{rank}") if nccl else torch.device("cpu")
torch.manual_seed(0)
f, h = (512, 1024) if os.environ.get("WIDE") == "1" else (32, 64)
g = torch.Generator().manual_seed(1)
x = torch.randn(512, f, generator=g)
y = torch.randint(0, 4, (512,), generator=g)
table = torch.randn(2048, 512, generator=g)
model = DDP(torch.nn.Sequential(torch.nn.Linear(f, h), torch.nn.ReLU(), torch.nn.Linear(h, 4)).to(dev))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(8):
    if os.environ.get("SLEEP_RANK") == str(rank) and step == 0:
        time.sleep(0.5)
    idx = torch.arange((step * world + rank) * 32, (step * world + rank) * 32 + 32) % 512
    xb = x[idx] - table.mean() if os.environ.get("WIDE") == "1" else x[idx]
    loss = torch.nn.functional.cross_entropy(model(xb.to(dev)), y[idx].to(dev))
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
PYSRC

run_rc "$REPRUN" exec -o "$T/sleep" -q --vary env:SLEEP_RANK=0,1 -- "$PY" -m torch.distributed.run --nproc_per_node=2 \
  --master_port="$PORT" ddp.py
[[ $RC == 0 ]] || fail "a sleeping rank made the runs differ, exit $RC: $(cat "$T/out") $(cat "$T/err")"
grep -q "IDENTICAL: 16 step records bitwise identical on 2 ranks" "$T/out" || fail "not compared rank by rank: $(cat "$T/out")"
[[ $(json_get "$T/sleep/run-1/manifest.json" ranks.world_size) == 2 ]] || fail "no world size in the manifest"

run_rc "$REPRUN" exec -o "$T/threads" -q --pin WIDE=1 --vary env:OMP_NUM_THREADS=1,2 -- "$PY" -m torch.distributed.run \
  --nproc_per_node=2 --master_port="$PORT" ddp.py
[[ $RC == 1 ]] || fail "threads varied: exit $RC: $(cat "$T/err")"
grep -qE "^FAIL: .*run-2: rank [01], step 1, forward, .*aten.mean — same inputs, different outputs" "$T/out" ||
  fail "threads varied: $(head -1 "$T/out")"
pass
