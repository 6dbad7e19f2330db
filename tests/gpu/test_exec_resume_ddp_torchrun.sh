# reprun exec --vary resume=N on a data-parallel job started by torchrun (torch 2.x on a lent GPU
# machine): two ranks with the model on the GPU (NCCL on two GPUs, else gloo with both ranks on the
# one GPU). The job checkpoints at the end of each epoch of 4 steps (rank 0 the model and optimizer,
# each rank its own CPU and CUDA generator states) and resumes from it. Every rank stops after step 5, the
# ranks and torchrun's agent are killed at once, and the job runs again: (a) PASS, every rank's
# table restored; (b) BUG=rankgen: rank 0's CUDA generator state saved and loaded by every rank: the
# torch CUDA generator NOT restored on rank 1, named with the dropout's op and line on rank 1.
# Skipped (exit 125) without an NVIDIA GPU and a python3 whose torch sees it.
source "$(dirname "$0")/../e2e/lib.sh"
nvidia-smi -L >/dev/null 2>&1 || skip "no NVIDIA GPU (nvidia-smi -L failed or is not installed)"
PY=$(python_with_cuda_torch) || skip "no python3 with a torch where torch.cuda.is_available() is True"
"$PY" -c "import torch.distributed.run" 2>/dev/null || skip "no torch.distributed.run (torchrun)"
PORT=$("$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
own_tmpdir # torchrun leaves a folder in TMPDIR at each launch

cat >ddp_resume.py <<'PYSRC'
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

BUG = os.environ.get("BUG", "")
DIR = sys.argv[1]
CKPT = os.path.join(DIR, "ckpt.pt")
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
nccl = torch.cuda.device_count() >= world
dist.init_process_group("nccl" if nccl else "gloo")
dev = torch.device(f"cuda:{rank}" if nccl else "cuda:0")
torch.manual_seed(0)
x = torch.randn(256, 16)
y = torch.randint(0, 4, (256,))
ds = TensorDataset(x, y)
sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=3)
dl = DataLoader(ds, batch_size=32, sampler=sampler)
model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(0.3),
                                torch.nn.Linear(32, 4)).to(dev))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
torch.manual_seed(100 + rank)  # each rank's own dropout masks (CPU and CUDA generators)
start = 0
if os.path.exists(CKPT):
    ck = torch.load(CKPT, map_location="cpu")
    model.module.load_state_dict(ck["model"])
    opt.load_state_dict(ck["opt"])
    start = ck["epoch"]
    cpu_rng, cuda_rng = torch.load(os.path.join(DIR, f"rng-{rank}.pt"))
    torch.set_rng_state(cpu_rng)  # the DataLoader draws its base seed from it at each epoch
    torch.cuda.set_rng_state(ck["cuda_rng"] if BUG == "rankgen" else cuda_rng, dev)  # rankgen: rank 0's, on every rank
for epoch in range(start, 3):
    sampler.set_epoch(epoch)
    for xb, yb in dl:
        loss = torch.nn.functional.cross_entropy(model(xb.to(dev)), yb.to(dev))
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save((torch.get_rng_state(), torch.cuda.get_rng_state(dev)), os.path.join(DIR, f"rng-{rank}.pt"))
    if rank == 0:
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "epoch": epoch + 1,
                    "cuda_rng": torch.cuda.get_rng_state(dev)}, CKPT)
    dist.barrier()
dist.destroy_process_group()
PYSRC
audit() {
  run_rc "$REPRUN" exec -o "$T/$1" -q --pin BUG="$2" --vary resume=5 -- "$PY" -m torch.distributed.run --nproc_per_node=2 \
    --master_port="$PORT" ddp_resume.py {run_dir}
}

audit ok ""
[[ $RC == 0 ]] || fail "(a) exit $RC: $(cat "$T/out") $(cat "$T/err")"
grep -q "^PASS: 2 runs of the program identical; run-2 killed after step 5 and resumed from step 4: every state restored" "$T/out" ||
  fail "(a) verdict: $(head -3 "$T/out")"
grep -q "IDENTICAL: 24 step records bitwise identical on 2 ranks" "$T/out" || fail "(a) not compared rank by rank: $(cat "$T/out")"
grep -qE "^    torch CUDA generator [0-9]+ +restored +restored$" "$T/out" || fail "(a) no CUDA generator row per rank: $(cat "$T/out")"

audit rankgen rankgen
[[ $RC == 1 ]] || fail "(b) exit $RC: $(cat "$T/out") $(cat "$T/err")"
grep -qE "^FAIL: .*NOT restored: torch CUDA generator [0-9]+ on rank 1; rank 1, step 5, forward, .*module module.2 \(Dropout\): " "$T/out" ||
  fail "(b) verdict: $(head -1 "$T/out")"
grep -qE "^    torch CUDA generator [0-9]+ +restored +NOT restored$" "$T/out" || fail "(b) table: $(cat "$T/out")"
pass
