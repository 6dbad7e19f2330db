# reprun exec on a data-parallel PyTorch program (DistributedDataParallel over gloo, two processes
# started by torch.multiprocessing.spawn: Debian's torch 1.13 torchrun fails on this Python for
# reasons of its own, so the launcher here is mp.spawn; the launcher and DataLoader workers are not
# ranks either way). Every rank's step log is recorded (rank 0's is steps.jsonl, rank r's
# ranks/<r>/steps.jsonl) and compared with the same rank's:
#  (a) a rank that sleeps before its first step (rank 0 in run-1, rank 1 in run-2) changes nothing:
#      PASS, every rank compared (it failed about half the time when whichever process stepped
#      first wrote the one step log); six plain runs of one exec pass too;
#  (b) the records: the manifest lists the world size and the rank logs, the framework facts the
#      backend and each rank's devices, summary.json each rank log's integrity facts; a damaged rank
#      log is exit 2;
#  (c) OMP_NUM_THREADS varied on batches centred on the mean of a 2048x512 table (a reduction torch
#      splits by thread on every machine): exit 1 naming the rank, aten.mean, its line and the
#      thread cause; no collective blamed;
#  (d) rank 1 alone draws unseeded numpy noise into its batch: localized to rank 1 and that line;
#      and into a gradient (a hook): the losses agree, the all-reduce spreads it to every rank, and
#      the search follows the collective's inputs to rank 1; ranks forked from the launcher too;
#  (e) another world size: one counted difference (ranks.world_size), the logs not compared;
#  (g) as (d), every rank of each replay dying at exit (SIGABRT) after its op trace: localized all the
#      same, with a note (a teardown that aborts, as torch 1.13's gloo may, is no failed replay);
#  (f) rank 1 adds an unseeded torch.rand to an all_reduce's input: no loss differs at step 1, and
#      the rank the op trace finds (1) is the one the verdict, divergence.rank and every format name
#      (issue 42 item 3); (d2) and (f) also: the header counts every rank's records as the body
#      does, a note every rank gives is said once, and no CUDA fix for a CPU job (issue 42 item 7).
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch (apt-get install python3-torch)"
"$PY" -c "import numpy, torch.distributed as d; assert d.is_available()" 2>/dev/null || skip "torch without distributed"
PORT=$("$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")

cat >ddp.py <<'PYSRC'
import os, time
import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

WIDE = os.environ.get("WIDE") == "1"


def worker(rank, world):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ["PORT"], rank=rank, world_size=world)
    torch.manual_seed(0)
    f, h = (512, 1024) if WIDE else (16, 32)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(256, f, generator=g)
    y = torch.randint(0, 4, (256,), generator=g)
    table = torch.randn(2048, 512, generator=g) if WIDE else None
    ds = TensorDataset(x, y)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=3)
    dl = DataLoader(ds, batch_size=32, sampler=sampler)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(f, h), torch.nn.ReLU(), torch.nn.Linear(h, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if os.environ.get("GRAD_NOISE_RANK") == str(rank):
        model.module[0].weight.register_hook(lambda g: g + torch.from_numpy(np.random.randn(*g.shape).astype("float32")))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for i, (xb, yb) in enumerate(dl):
            if os.environ.get("SLEEP_RANK") == str(rank) and epoch == 0 and i == 0:
                time.sleep(0.5)
            if os.environ.get("NOISE_RANK") == str(rank):
                xb = xb + torch.from_numpy(np.random.randn(*xb.shape).astype("float32")) * 0.01
            if WIDE:
                xb = xb - table.mean()
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            if os.environ.get("RAND_RANK") is not None:
                unseeded = torch.Generator()
                unseeded.seed()
                extra = torch.rand(1, generator=unseeded) if os.environ["RAND_RANK"] == str(rank) else torch.zeros(1)
                dist.all_reduce(extra)
                with torch.no_grad():
                    model.module[0].bias.add_(extra * 0.01)
            opt.step()
    dist.destroy_process_group()
    if os.environ.get("ABORT_AT_EXIT") and os.environ.get("REPRUN_OP_TRACE"):
        os.abort()  # a replay's rank that dies at exit after its trace, as torch 1.13's gloo teardown may


if __name__ == "__main__":
    world = int(os.environ.get("WORLD", "2"))
    mp.start_processes(worker, args=(world,), nprocs=world, start_method=os.environ.get("START", "spawn"))
PYSRC
line_of() { grep -n -- "$2" "$1" | head -1 | cut -d: -f1; }

# (a) the sleeping rank, then six plain runs.
run_rc "$REPRUN" exec -o "$T/sleep" -q --pin PORT=$PORT --vary env:SLEEP_RANK=0,1 -- "$PY" ddp.py
[[ $RC == 0 ]] || fail "(a) a sleeping rank made the runs differ, exit $RC: $(cat "$T/out") $(cat "$T/err")"
grep -q "^PASS: 2 runs of the program identical" "$T/out" || fail "(a) $(head -3 "$T/out")"
grep -q "IDENTICAL: 16 step records bitwise identical on 2 ranks" "$T/out" || fail "(a) not compared rank by rank: $(cat "$T/out")"
# Six independent launches of the job, each compared with the first (five execs of two runs each
# before: the same race, four launches fewer).
run_rc "$REPRUN" exec -o "$T/plain" -q --runs 6 --pin PORT=$PORT -- "$PY" ddp.py
[[ $RC == 0 ]] || fail "(a) six plain runs: exit $RC: $(head -8 "$T/out") $(cat "$T/err")"
grep -q "^PASS: 6 runs of the program identical" "$T/out" || fail "(a) six plain runs: $(head -3 "$T/out")"

# (b) the records.
R="$T/sleep/run-1"
[[ $(wc -l <"$R/steps.jsonl") == 8 && $(wc -l <"$R/ranks/1/steps.jsonl") == 8 ]] || fail "(b) rank logs: $(find "$R")"
cmp -s "$R/steps.jsonl" "$R/ranks/1/steps.jsonl" && fail "(b) both ranks logged the same losses (one rank's log twice?)"
"$PY" - "$R" <<'PYCHECK' || fail "(b) records: $(cat "$R/manifest.json") $(cat "$R/summary.json")"
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
s = json.load(open(sys.argv[1] + "/summary.json"))
assert m["ranks"] == {"world_size": 2, "logs": {"0": "steps.jsonl", "1": "ranks/1/steps.jsonl"}}, m["ranks"]
d = m["framework"]["distributed"]
assert d["world_size"] == 2 and d["backend"] == "gloo" and set(d["devices"]) == {"0", "1"}, d
assert s["rank_logs"]["1"]["records"] == 8 and s["rank_logs"]["1"]["xxh3"].startswith("xxh3:"), s
PYCHECK
[[ ! -e $R/ranks/1/capture-steps.jsonl && ! -e $R/ranks/1/framework.json ]] || fail "(b) capture files left in ranks/1"
cp -r "$T/sleep/run-2" "$T/damaged"
sed -i '3s/"loss":[0-9.e-]*/"loss":0.5/' "$T/damaged/ranks/1/steps.jsonl"
expect_error "ranks/1/steps.jsonl: damaged: its 8 step records do not match the digest in summary.json" \
  "$REPRUN" diff "$T/sleep/run-1" "$T/damaged"

# A rank log missing at the same world size: exit 1, named; a run without ranks: rank 0 compared, said.
for v in missing noranks; do
  cp -r "$T/sleep/run-2" "$T/$v"
  "$PY" - "$T/$v" "$v" <<'PYEDIT'
import json, shutil, sys
d, v = sys.argv[1], sys.argv[2]
m, s = json.load(open(d + "/manifest.json")), json.load(open(d + "/summary.json"))
if v == "missing":
    del m["ranks"]["logs"]["1"]
else:
    del m["ranks"]
del s["rank_logs"]
shutil.rmtree(d + "/ranks")
json.dump(m, open(d + "/manifest.json", "w"), indent=1)
json.dump(s, open(d + "/summary.json", "w"), indent=1)
PYEDIT
done
expect_rc 1 "$REPRUN" diff "$T/sleep/run-1" "$T/missing" --ignore-meta env --ignore-meta pins
grep -q '^DIFFERENT: step records identical, but 1 metadata field differs' "$T/out" || fail "(b) missing: $(cat "$T/out")"
grep -qE '^  \[outputs\] ranks.logs.1: "ranks/1/steps.jsonl" -> \(absent\)' "$T/out" || fail "(b) missing: not named: $(cat "$T/out")"
grep -q 'rank 1: no step log in B: not compared' "$T/out" || fail "(b) missing: no note: $(cat "$T/out")"
run_rc "$REPRUN" diff "$T/sleep/run-1" "$T/noranks"
grep -q "B recorded no ranks (no process group): its step log is compared with rank 0's only" "$T/out" ||
  fail "(b) no ranks: no note: $(cat "$T/out")"

# (c) threads varied on a reduction torch splits by thread.
fwd=$(line_of ddp.py 'xb = xb - table.mean()')
run_rc "$REPRUN" exec -o "$T/threads" -q --pin PORT=$PORT --pin WIDE=1 --vary env:OMP_NUM_THREADS=1,2 --format json -- "$PY" ddp.py
[[ $RC == 1 ]] || fail "(c) exit $RC: $(head -c 2000 "$T/out") $(cat "$T/err")"
"$PY" - "$T/out" "ddp.py:$fwd" <<'PYCHECK' || fail "(c) $(head -c 5000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
pair = r["pairs"][0]
loc, div = pair["localization"], pair["diff"]["divergence"]
rank = div["rank"]
assert loc["found"] and loc["sentence"].startswith(f"rank {rank}, step 1, forward"), loc["sentence"]
assert "aten.mean" in loc["sentence"] and sys.argv[2] in loc["sentence"], loc["sentence"]
assert "threads are 1 in A and 2 in B" in loc["sentence"], loc["sentence"]
assert "c10d" not in loc["sentence"], loc["sentence"]
ranks = pair["diff"]["ranks"]
assert [x["rank"] for x in ranks] == [0, 1] and all(not x["identical"] for x in ranks), ranks
causes = [d["cause"] for d in pair["diff"]["diagnosis"]]
assert f"on rank {rank}" in causes[0] and "threads" in causes[0], causes
PYCHECK

# (d) rank 1 draws unseeded noise into its batch.
noise=$(line_of ddp.py 'xb = xb + torch.from_numpy')
run_rc "$REPRUN" exec -o "$T/noise" -q --pin PORT=$PORT --pin NOISE_RANK=1 -- "$PY" ddp.py
[[ $RC == 1 ]] || fail "(d) exit $RC: $(cat "$T/err")"
grep -q "^FAIL: .*run-2: rank 1, step 1, forward, worker (ddp.py:$noise): aten.lift_fresh — its inputs already differ.* input 0 was not made by a traced op" "$T/out" ||
  fail "(d) not localized to rank 1 and its line: $(head -1 "$T/out")"
grep -q "^DIFFERENT: runs part at step 1 on rank 1 (computation)" "$T/out" || fail "(d) verdict: $(cat "$T/out")"
grep -q "by rank: rank 0: step 1; rank 1: step 1 (loss differs)" "$T/out" || fail "(d) by rank: $(cat "$T/out")"
# Ranks forked from the launcher (start_method="fork") inherit its capture and make it their own.
run_rc "$REPRUN" exec -o "$T/fork" -q --pin PORT=$PORT --pin NOISE_RANK=1 --pin START=fork -- "$PY" ddp.py
[[ $RC == 1 ]] || fail "(d) fork: exit $RC: $(cat "$T/err")"
grep -q "^FAIL: .*run-2: rank 1, step 1, forward, worker (ddp.py:$noise): aten.lift_fresh" "$T/out" ||
  fail "(d) fork: $(head -1 "$T/out")"

# (g) the same, and every rank of each replay dies at exit (SIGABRT) after its op trace is complete:
# the traces are used, and a note says the replays' programs failed after them.
run_rc "$REPRUN" exec -o "$T/abort" -q --pin PORT=$PORT --pin NOISE_RANK=1 --pin ABORT_AT_EXIT=1 -- "$PY" ddp.py
[[ $RC == 1 ]] || fail "(g) exit $RC: $(cat "$T/err")"
grep -q "^FAIL: .*run-2: rank 1, step 1, forward, worker (ddp.py:$noise): aten.lift_fresh" "$T/out" ||
  fail "(g) a replay that died at exit after its trace: not localized: $(cat "$T/out")"
grep -q "a replay's program failed after its op traces were complete (.*): they are used" "$T/out" ||
  fail "(g) no note of the replay's failure: $(cat "$T/out")"

# (d2) rank 1 adds unseeded noise to a gradient: every loss of step 1 is equal, the all-reduce spreads
# the difference to every rank, and the search follows the rank whose input to it differs.
hook=$(line_of ddp.py 'register_hook(lambda g')
run_rc "$REPRUN" exec -o "$T/gradnoise" -q --pin PORT=$PORT --pin GRAD_NOISE_RANK=1 -- "$PY" ddp.py
[[ $RC == 1 ]] || fail "(d2) exit $RC: $(cat "$T/err")"
grep -q "by rank: rank 0: step 1; rank 1: step 1$" "$T/out" || fail "(d2) by rank: $(cat "$T/out")"
grep -q "^FAIL: .*run-2: rank 1, step 1, backward, .*(ddp.py:$hook): aten.lift_fresh — its inputs already differ" "$T/out" ||
  fail "(d2) not followed to rank 1's hook: $(head -1 "$T/out")"
grep -q "^FAIL: .*c10d" "$T/out" && fail "(d2) a collective blamed: $(head -1 "$T/out")"
# The root is the rank the trace found, in the header too (it said rank 0); the header counts what
# the body compares; rank 1's copy of rank 0's note is not repeated; no cuBLAS fix on the CPU.
grep -q "^DIFFERENT: runs part at step 1 on rank 1 (computation)" "$T/out" || fail "(d2) header: $(cat "$T/out")"
grep -q "^  step 1, rank 1 (line 1): computation" "$T/out" || fail "(d2) first divergence: $(cat "$T/out")"
grep -q "^  A: .*run-1 (complete, 16 records on 2 ranks)$" "$T/out" || fail "(d2) records: $(cat "$T/out")"
grep -q "CUBLAS_WORKSPACE_CONFIG" "$T/out" && fail "(d2) a cuBLAS fix for a CPU job: $(grep -n CUBLAS "$T/out")"
# exec's own report leaves the built-in notes out; reprun diff of the same runs gives the step-0 note
# of every rank's log, said once.
run_rc "$REPRUN" diff "$T/gradnoise/run-1" "$T/gradnoise/run-2"
[[ $(grep -c "no step-0 record" "$T/out") == 1 ]] || fail "(d2) a note repeated per rank: $(grep "step-0" "$T/out")"

# (f) an unseeded draw into an all_reduce's input on rank 1: every format names rank 1.
rand=$(line_of ddp.py 'extra = torch.rand(1, generator=unseeded)')
run_rc "$REPRUN" exec -o "$T/rand" -q --pin PORT=$PORT --pin RAND_RANK=1 --format json --markdown "$T/rand.md" \
  --html "$T/rand.html" --junit "$T/rand.xml" -- "$PY" ddp.py
[[ $RC == 1 ]] || fail "(f) exit $RC: $(head -c 3000 "$T/out") $(cat "$T/err")"
"$PY" - "$T/out" "ddp.py:$rand" <<'PYCHECK' || fail "(f) $(head -c 6000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
pair = r["pairs"][0]
loc, diff = pair["localization"], pair["diff"]
assert loc["found"] and loc["rank"] == 1, loc
assert loc["sentence"].startswith("rank 1, step 1, ") and "aten.rand" in loc["sentence"] and sys.argv[2] in loc["sentence"], loc
assert diff["divergence"]["rank"] == 1, diff["divergence"]
assert diff["verdict"].startswith("DIFFERENT: runs part at step 1 on rank 1 (computation)"), diff["verdict"]
assert not any(x["loss_differs"] for x in diff["ranks"]), diff["ranks"]
assert diff["a"]["records_all_ranks"] == 16 and diff["b"]["records_all_ranks"] == 16, diff["a"]
assert not any("no step-0 record" in n for n in diff["notes"]), diff["notes"]  # exec leaves built-in notes out
assert not any("CUBLAS" in d["fix"] for d in diff["diagnosis"]), diff["diagnosis"]
PYCHECK
for f in "$T/rand.md" "$T/rand.html"; do
  grep -q "runs part at step 1 on rank 1 (computation)" "$f" || fail "(f) $f does not name rank 1: $(grep -o "on rank [0-9]" "$f")"
  grep -q "on rank 0" "$f" && fail "(f) $f names rank 0: $(grep -o ".\{60\}on rank 0.\{20\}" "$f")"
done
grep -q "rank 1, step 1" "$T/rand.xml" || fail "(f) JUnit: $(cat "$T/rand.xml")"

# The resume audit of a data-parallel program (every rank stopped, the job killed and resumed) is
# test_exec_resume_ddp.sh's; its deadline option takes a duration.
expect_error "--resume-deadline 0: expected a duration" \
  "$REPRUN" exec -o "$T/resume" -q --pin PORT=$PORT --resume-deadline 0 --vary resume=3 -- "$PY" ddp.py

# (e) another world size.
run_rc "$REPRUN" exec -o "$T/world" -q --pin PORT=$PORT --vary env:WORLD=2,3 -- "$PY" ddp.py
[[ $RC == 1 ]] || fail "(e) exit $RC: $(cat "$T/err")"
grep -q "DIFFERENT: world sizes differ (2 -> 3), step logs not compared; 1 metadata field differs" "$T/out" ||
  fail "(e) verdict: $(cat "$T/out")"
grep -qE "^  \[distributed\] ranks.world_size: 2 -> 3" "$T/out" || fail "(e) the world size is not the counted field: $(cat "$T/out")"
pass
