# reprun exec on a data-parallel program started by torchrun, as users start their jobs: two ranks
# over gloo on the CPU. torchrun's agent imports torch but has no process group: it is not a rank
# and records nothing. (a) A rank that sleeps before its first step (rank 0 in run-1, rank 1 in
# run-2) changes nothing: PASS, both ranks compared. (b) OMP_NUM_THREADS varied on batches centred
# on the mean of a 2048x512 table (a reduction torch splits by thread): exit 1 naming a rank,
# aten.mean and its line. (c) Rank 1 alone adds unseeded numpy noise to its batch: localized to
# rank 1 and that line. (d) One rank (--nproc_per_node=1, a script written for DDP) under --vary
# resume: torchrun starts its worker in a session of its own, and the capture kills the launcher's
# group with it, as a preemption does (the launcher does not report a failed worker): PASS. torch 2.x only: Debian's torch 1.13 torchrun fails on this Python for
# reasons of its own (test_exec_ddp.sh starts its ranks with mp.spawn on both legs).
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch"
"$PY" -c "import sys, torch, torch.distributed as d, torch.distributed.run, numpy; sys.exit(0 if d.is_available() and int(torch.__version__.split('.')[0]) >= 2 else 1)" 2>/dev/null ||
  skip "torchrun is tested with torch 2.x (the torch2 leg); this python3 has torch $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
PORT=$("$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
own_tmpdir # torchrun leaves a folder in TMPDIR at each launch

cat >ddp.py <<'PYSRC'
import os
import time

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo")
torch.manual_seed(0)
g = torch.Generator().manual_seed(1)
x = torch.randn(512, 512, generator=g)
y = torch.randint(0, 4, (512,), generator=g)
table = torch.randn(2048, 512, generator=g)
model = DDP(torch.nn.Sequential(torch.nn.Linear(512, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(6):
    if os.environ.get("SLEEP_RANK") == str(rank) and step == 0:
        time.sleep(0.5)
    idx = torch.arange((step * world + rank) * 32, (step * world + rank) * 32 + 32) % 512
    xb = x[idx]
    if os.environ.get("CENTRE") == "1":
        xb = xb - table.mean()
    if os.environ.get("NOISE_RANK") == str(rank):
        xb = xb + torch.from_numpy(np.random.randn(*xb.shape).astype("float32")) * 0.01
    loss = torch.nn.functional.cross_entropy(model(xb), y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
PYSRC
line_of() { grep -n -- "$2" "$1" | head -1 | cut -d: -f1; }
launch=("$PY" -m torch.distributed.run --nproc_per_node=2 --master_port="$PORT" ddp.py)

# (a) a sleeping rank changes nothing.
run_rc "$REPRUN" exec -o "$T/sleep" -q --vary env:SLEEP_RANK=0,1 -- "${launch[@]}"
[[ $RC == 0 ]] || fail "(a) a sleeping rank made the runs differ, exit $RC: $(cat "$T/out") $(cat "$T/err")"
grep -q "IDENTICAL: 12 step records bitwise identical on 2 ranks" "$T/out" || fail "(a) not compared rank by rank: $(cat "$T/out")"
[[ $(json_get "$T/sleep/run-1/manifest.json" ranks.world_size) == 2 ]] || fail "(a) no world size in the manifest"

# (b) threads varied on a reduction torch splits by thread.
run_rc "$REPRUN" exec -o "$T/threads" -q --pin CENTRE=1 --vary env:OMP_NUM_THREADS=1,2 -- "${launch[@]}"
[[ $RC == 1 ]] || fail "(b) threads varied: exit $RC: $(cat "$T/out") $(cat "$T/err")"
grep -qE "^FAIL: .*run-2: rank [01], step 1, forward, ddp.py:$(line_of ddp.py 'table.mean()'): aten.mean — same inputs, different outputs" "$T/out" ||
  fail "(b) threads varied: $(head -1 "$T/out")"

# (c) rank 1 draws unseeded noise into its batch.
run_rc "$REPRUN" exec -o "$T/noise" -q --pin NOISE_RANK=1 -- "${launch[@]}"
[[ $RC == 1 ]] || fail "(c) exit $RC: $(cat "$T/out") $(cat "$T/err")"
grep -qE "^FAIL: .*run-2: rank 1, step 1, forward, ddp.py:$(line_of ddp.py 'xb = xb + torch.from_numpy'): .* input 0 was not made by a traced op" "$T/out" ||
  fail "(c) not localized to rank 1 and its line: $(head -1 "$T/out")"

# (d) one rank, checkpointing every 10 steps, killed after step 20.
cat >one.py <<'PYSRC'
import os, sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(torch.nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(256, 16), torch.randn(256, 2)
start = 0
if os.path.exists(sys.argv[1]):
    c = torch.load(sys.argv[1])
    model.module.load_state_dict(c["model"]); opt.load_state_dict(c["opt"]); start = c["step"]
for step in range(start + 1, 31):
    b = slice((step * 8) % 256, (step * 8) % 256 + 8)
    loss = torch.nn.functional.mse_loss(model(x[b]), y[b])
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 10 == 0:
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, sys.argv[1])
dist.destroy_process_group()
PYSRC
run_rc "$REPRUN" exec -o "$T/one" -q --vary resume=20 -- "$PY" -m torch.distributed.run --nproc_per_node=1 --master_port="$PORT" one.py '{run_dir}/c.pt'
[[ $RC == 0 ]] || fail "(d) one rank: exit $RC: $(cat "$T/out") $(cat "$T/err")"
grep -q "^PASS: 2 runs of the program identical; run-2 killed after step 20 and resumed from step 20: every state restored" "$T/out" ||
  fail "(d) one rank: verdict: $(head -3 "$T/out")"
pass
