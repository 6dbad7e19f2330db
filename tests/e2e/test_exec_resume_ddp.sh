# reprun exec --vary resume=N on a data-parallel program (DistributedDataParallel over gloo, two ranks
# started by torch.multiprocessing.spawn): every rank stops at its first training forward after step
# N, reprun kills the ranks and the launcher at once, runs the command again, and audits each rank's
# resume. The script checkpoints at the end of each epoch of 4 steps (rank 0 saves the model and
# optimizer, each rank its own generator state) and resumes from it; its switches leave out one state:
#  (a) nothing left out: PASS, every rank's table restored; the records: run-2's rank logs stitched
#      (12 records each), each process folder with its own rank logs, the manifest's rank list;
#  (b) BUG=epoch: set_epoch fed from a counter that restarts at the resume: the sampler epoch NOT
#      restored on ranks 0 and 1, the batch of step 5 differs, the op aten.addmm at the forward's line;
#  (c) BUG=rankgen: ranks seeded with 100 + rank, rank 0's generator state saved and loaded by all:
#      the torch CPU generator NOT restored on rank 1 ("it equals rank 0's state"), the op the dropout's
#      aten.bernoulli_ on rank 1;
#  (d) BUG=optim: the optimizer state (SGD momentum) not saved: NOT restored on ranks 0 and 1, the
#      op the momentum's in opt.step() (not DDP's gradient bucket, laid out in another order in the
#      resumed job's first iteration);
#  (e) a rank that never reaches its stop (rank 1 waits in a barrier before its forward, which rank 0
#      enters only after its own forward, where it stopped): ended by --resume-deadline, exit 2 naming
#      rank 1, and no process of the job left;
#  (f) a process group of one rank (WORLD=1, as torchrun --nproc_per_node=1 starts a script written
#      for DDP): killed with its launcher, resumed, PASS, and run-2's manifest says one rank, as
#      run-1's does.
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch (apt-get install python3-torch)"
"$PY" -c "import torch.distributed as d; assert d.is_available()" 2>/dev/null || skip "torch without distributed"
PORT=$("$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")

cat >ddp_resume.py <<'PYSRC'
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

BUG = os.environ.get("BUG", "")  # epoch | rankgen | optim
DIR = sys.argv[1]
CKPT = os.path.join(DIR, "ckpt.pt")


def worker(rank, world):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ["PORT"], rank=rank, world_size=world)
    torch.manual_seed(0)
    x = torch.randn(256, 16)
    y = torch.randint(0, 4, (256,))
    ds = TensorDataset(x, y)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=3)
    dl = DataLoader(ds, batch_size=32, sampler=sampler)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(0.3),
                                    torch.nn.Linear(32, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    torch.manual_seed(100 + rank)  # each rank's own dropout masks
    start = 0
    if os.path.exists(CKPT):
        ck = torch.load(CKPT)
        model.module.load_state_dict(ck["model"])
        if "opt" in ck:
            opt.load_state_dict(ck["opt"])
        start = ck["epoch"]
        if BUG == "rankgen":
            torch.set_rng_state(ck["rng"])  # rank 0's state, on every rank
        else:
            torch.set_rng_state(torch.load(os.path.join(DIR, f"rng-{rank}.pt")))
    counter, done = 0, 0
    for epoch in range(start, 3):
        sampler.set_epoch(counter if BUG == "epoch" else epoch)
        counter += 1
        for xb, yb in dl:
            if rank == 1 and os.environ.get("BARRIER_AFTER") == str(done):
                dist.barrier()  # rank 1 waits here, before its forward
            out = model(xb)
            if rank == 0 and os.environ.get("BARRIER_AFTER") == str(done):
                dist.barrier()  # rank 0 after its forward: an uninterrupted run meets rank 1 here
            loss = torch.nn.functional.cross_entropy(out, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            done += 1
        torch.save(torch.get_rng_state(), os.path.join(DIR, f"rng-{rank}.pt"))
        if rank == 0:
            ck = {"model": model.module.state_dict(), "epoch": epoch + 1, "rng": torch.get_rng_state()}
            if BUG != "optim":
                ck["opt"] = opt.state_dict()
            torch.save(ck, CKPT)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    world = int(os.environ.get("WORLD", "2"))
    mp.start_processes(worker, args=(world,), nprocs=world, start_method="spawn")
PYSRC
line_of() { grep -n -- "$2" "$1" | head -1 | cut -d: -f1; }
FWD=$(line_of ddp_resume.py "out = model(xb)")
STEP=$(line_of ddp_resume.py "opt.step()")
audit() { run_rc "$REPRUN" exec -o "$T/$1" -q --pin PORT=$PORT --pin BUG="$2" --vary resume=5 -- "$PY" ddp_resume.py {run_dir}; }

# (a) nothing left out.
audit ok ""
[[ $RC == 0 ]] || fail "(a) exit $RC: $(cat "$T/out") $(cat "$T/err")"
grep -q "^PASS: 2 runs of the program identical; run-2 killed after step 5 and resumed from step 4: every state restored" "$T/out" ||
  fail "(a) verdict: $(head -3 "$T/out")"
grep -q "IDENTICAL: 24 step records bitwise identical on 2 ranks" "$T/out" || fail "(a) not compared rank by rank: $(cat "$T/out")"
grep -q "^Resume: every rank of the job (2 ranks) stopped at its first training forward after step 5, then the ranks and the launcher killed at once" "$T/out" ||
  fail "(a) resume line: $(grep Resume "$T/out")"
grep -qE "^    state +rank 0 +rank 1$" "$T/out" || fail "(a) no column per rank: $(cat "$T/out")"
grep -qE "^    torch CPU generator +restored +restored$" "$T/out" || fail "(a) generator row: $(cat "$T/out")"
R="$T/ok/run-2"
[[ $(wc -l <"$R/steps.jsonl") == 12 && $(wc -l <"$R/ranks/1/steps.jsonl") == 12 ]] || fail "(a) stitched logs: $(find "$R" -name steps.jsonl | xargs wc -l)"
cmp -s "$R/ranks/1/steps.jsonl" "$T/ok/run-1/ranks/1/steps.jsonl" || fail "(a) rank 1's stitched log is not run-1's"
for p in 1 2; do
  [[ -s $R/processes/$p/steps.jsonl && -s $R/processes/$p/ranks/1/steps.jsonl ]] || fail "(a) process $p's rank logs: $(find "$R/processes")"
done
"$PY" - "$R" <<'PYCHECK' || fail "(a) records: $(cat "$R/manifest.json")"
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
s = json.load(open(sys.argv[1] + "/summary.json"))
assert m["ranks"] == {"world_size": 2, "logs": {"0": "steps.jsonl", "1": "ranks/1/steps.jsonl"}}, m["ranks"]
assert s["rank_logs"]["1"]["records"] == 12, s
ev = [json.loads(l) for l in open(sys.argv[1] + "/processes/1/events.jsonl")]
stops = sorted(e["rank"] for e in ev if e["event"] == "stop")
assert stops == [0, 1], stops
assert all("rank" in e for e in ev if e["event"] == "state"), "a rank's state event without its rank"
PYCHECK

# (b)-(d): each switch leaves one state out.
audit epoch epoch
[[ $RC == 1 ]] || fail "(b) exit $RC: $(cat "$T/out") $(cat "$T/err")"
grep -qE "^FAIL: .*NOT restored: sampler epoch \(ddp_resume.py:[0-9]+\) on ranks 0 and 1, batch on ranks 0 and 1; rank [01], step 5, forward, worker \(ddp_resume.py:$FWD\), module module.0 \(Linear\): aten.addmm" "$T/out" ||
  fail "(b) verdict: $(head -1 "$T/out")"
grep -q "its order is drawn for the sampler epoch" "$T/out" || fail "(b) the batch not tied to the epoch: $(head -1 "$T/out")"
grep -qE "^    sampler epoch \(ddp_resume.py:[0-9]+\) +NOT restored +NOT restored$" "$T/out" || fail "(b) table: $(cat "$T/out")"
grep -q '"seed": 3' "$T/epoch/run-2/processes/2/events.jsonl" 2>/dev/null ||
  grep -q '"seed":3' "$T/epoch/run-2/processes/2/events.jsonl" || fail "(b) the sampler's seed is not in the epoch row's detail"

audit rankgen rankgen
[[ $RC == 1 ]] || fail "(c) exit $RC: $(cat "$T/out") $(cat "$T/err")"
grep -qE "^FAIL: .*NOT restored: torch CPU generator on rank 1; rank 1, step 5, forward, worker \(ddp_resume.py:$FWD\), module module.2 \(Dropout\): aten.bernoulli_ — same inputs, different outputs. Torch CPU generator NOT restored on rank 1 at the resume after step 4 \(it equals rank 0's state\)" "$T/out" ||
  fail "(c) verdict: $(head -1 "$T/out")"
grep -qE "^    torch CPU generator +restored +NOT restored$" "$T/out" || fail "(c) table: $(cat "$T/out")"

audit optim optim
[[ $RC == 1 ]] || fail "(d) exit $RC: $(cat "$T/out") $(cat "$T/err")"
# The resumed job's first iteration fills DDP's gradient bucket in another layout than run-1's later
# ones: not a difference; the first op that differs is the momentum's, in the optimizer's step.
grep -qE "^FAIL: .*NOT restored: optimizer 0 \(SGD\): state on ranks 0 and 1; rank [01], step 5, optimizer, worker \(ddp_resume.py:$STEP\): " "$T/out" ||
  fail "(d) verdict: $(head -1 "$T/out")"
grep -qE "^  1\. .* at ddp_resume.py:[0-9]+ on rank [01]: optimizer 0 \(SGD\): state NOT restored on rank [01] at the resume after step 4" "$T/out" ||
  fail "(d) first cause: $(grep -A3 "^Likely" "$T/out")"

# (e) a rank that never stops: the deadline ends the job, and nothing of it is left.
BARRIER_AFTER=5 run_rc "$REPRUN" exec -o "$T/late" -q --pin PORT=$PORT --resume-deadline 4s --vary resume=5 -- "$PY" ddp_resume.py {run_dir}
[[ $RC == 2 ]] || fail "(e) exit $RC: $(cat "$T/out") $(cat "$T/err")"
grep -q "^reprun: error: --vary resume=5: run-2: rank 1 (after step 5) did not stop within 4s of the first rank that stopped after step 5" "$T/err" ||
  fail "(e) error: $(cat "$T/err")"
for pid in $("$PY" -c "
import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e['event'] in ('rank', 'stop'):
        print(e['pid'])" "$T/late/run-2/processes/1/events.jsonl") $(pgrep -f "ddp_resume.py $T/late"); do
  kill -0 "$pid" 2>/dev/null && fail "(e) process $pid of the job is still running: $(ps -o pid,args -p "$pid")"
done
[[ -n $(grep -c '"event":"rank"' "$T/late/run-2/processes/1/events.jsonl") ]] || fail "(e) no rank reported its pid"

# (f) one rank: resumed as a single process (no job), its launcher killed with it; 8 steps an epoch.
run_rc "$REPRUN" exec -o "$T/one" -q --pin PORT=$PORT --pin WORLD=1 --vary resume=10 -- "$PY" ddp_resume.py {run_dir}
[[ $RC == 0 ]] || fail "(f) one rank: exit $RC: $(cat "$T/out") $(cat "$T/err")"
grep -q "^PASS: 2 runs of the program identical; run-2 killed after step 10 and resumed from step 8: every state restored" "$T/out" ||
  fail "(f) one rank: verdict: $(head -3 "$T/out")"
"$PY" - "$T/one" <<'PYCHECK' || fail "(f) one rank: manifests: $(cat "$T/one/run-2/manifest.json")"
import json, sys
m1, m2 = (json.load(open(f"{sys.argv[1]}/run-{i}/manifest.json")) for i in (1, 2))
assert m1["ranks"] == m2["ranks"] == {"world_size": 1, "logs": {"0": "steps.jsonl"}}, (m1.get("ranks"), m2.get("ranks"))
assert m1["framework"]["distributed"] == m2["framework"]["distributed"], (m1["framework"]["distributed"], m2["framework"]["distributed"])
PYCHECK
pass
