# reprun exec --vary resume=N: what the training loss cannot show, and resumes the boundary table
# could not explain before.
#  (a) BatchNorm and an EMA copy of the model, all in the checkpoint: PASS, the buffers and the EMA
#      in the table, restored; (b) the checkpoint holds dict(model.named_parameters()) (BatchNorm's
#      running statistics lost): exit 1, "buffers NOT restored"; (c) the EMA left out: exit 1 naming
#      it by its variable, though every step record is identical;
#  (d) a DataLoader that shuffles without a generator of its own, in a script that saves and
#      restores torch.get_rng_state(): torch's generator is "restored by the program", the batch is
#      explained by the loader's iterator drawing its seed mid-epoch, and the fix is not the one the
#      script already applies;
#  (e) a checkpoint saved between backward() and step(): that is the first cause, and no false
#      "no forward came after its save".
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch"

cat >bn.py <<'PYSRC'
import copy, os, sys
import torch
ckpt, FORGET = sys.argv[1], os.environ.get("FORGET", "")
torch.manual_seed(0)
X = torch.randn(512, 8, generator=torch.Generator().manual_seed(1))
Y = (X.sum(1) > 0).long()
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
ema = copy.deepcopy(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
start = 0
if os.path.exists(ckpt):
    c = torch.load(ckpt, weights_only=False)
    model.load_state_dict(c["model"], strict=FORGET != "buffers")
    if FORGET != "ema":
        ema.load_state_dict(c["ema"])
    opt.load_state_dict(c["opt"])
    start = c["step"]
for step in range(start + 1, 41):
    idx = torch.arange((step * 32) % 512, (step * 32) % 512 + 32)
    loss = torch.nn.functional.cross_entropy(model(X[idx]), Y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for e, p in zip(ema.state_dict().values(), model.state_dict().values()):
            e.copy_(e * 0.9 + p * 0.1) if e.is_floating_point() else e.copy_(p)
    if step % 10 == 0:
        state = dict(model.named_parameters()) if FORGET == "buffers" else model.state_dict()
        torch.save({"model": state, "ema": ema.state_dict(), "opt": opt.state_dict(), "step": step}, ckpt)
PYSRC

# (a)
run_rc "$REPRUN" exec -o "$T/a" -q --vary resume=20 -- "$PY" bn.py '{run_dir}/c.pt'
[[ $RC == 0 ]] || fail "(a) exit $RC: $(cat "$T/out") $(tail -5 "$T/err")"
grep -qE "^    buffers +restored$" "$T/out" || fail "(a) no buffers row: $(cat "$T/out")"
grep -qE "^    ema \(Sequential\) +restored$" "$T/out" || fail "(a) no EMA row: $(cat "$T/out")"
grep -q '"1.running_mean":{"checksum"' "$T/a/run-1/steps.jsonl" || fail "(a) the step log has no buffers: $(head -1 "$T/a/run-1/steps.jsonl")"

# (b)
run_rc "$REPRUN" exec -o "$T/b" -q --pin FORGET=buffers --vary resume=20 -- "$PY" bn.py '{run_dir}/c.pt'
[[ $RC == 1 ]] || fail "(b) exit $RC: $(cat "$T/out")"
head -1 "$T/out" | grep -q "NOT restored: buffers" || fail "(b) $(head -1 "$T/out")"
grep -qE "^    buffers +NOT restored: .*3 of 3 tensors differ \(first: 1.running_mean\)" "$T/out" || fail "(b) $(cat "$T/out")"

# (c)
run_rc "$REPRUN" exec -o "$T/c" -q --pin FORGET=ema --vary resume=20 -- "$PY" bn.py '{run_dir}/c.pt'
[[ $RC == 1 ]] || fail "(c) exit $RC: $(cat "$T/out")"
head -1 "$T/out" | grep -q "NOT restored: ema (Sequential); DIFFERENT: step records identical, but the resume after step 20 did not restore ema (Sequential)" ||
  fail "(c) $(head -1 "$T/out")"

# (d)
cat >dl.py <<'PYSRC'
import os, sys
import torch
ckpt = sys.argv[1]
torch.manual_seed(0)
X = torch.randn(256, 8, generator=torch.Generator().manual_seed(1))
Y = (X.sum(1) > 0).long()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=32, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = 0
if os.path.exists(ckpt):
    c = torch.load(ckpt, weights_only=False)
    model.load_state_dict(c["model"]); opt.load_state_dict(c["opt"]); torch.set_rng_state(c["rng"]); step = c["step"]
start_epoch, skip = divmod(step, len(loader))
for epoch in range(start_epoch, 3):
    for i, (xb, yb) in enumerate(loader):
        if epoch == start_epoch and i < skip:
            continue
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad(); loss.backward(); opt.step()
        step += 1
        if step % 4 == 0:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "rng": torch.get_rng_state(), "step": step}, ckpt)
PYSRC
run_rc "$REPRUN" exec -o "$T/d" -q --vary resume=12 -- "$PY" dl.py '{run_dir}/c.pt'
[[ $RC == 1 ]] || fail "(d) exit $RC: $(cat "$T/out")"
grep -qE "^    torch CPU generator +restored by the program: torch.set_rng_state at dl.py:13 .*decided by the DataLoader \(dl.py:7\)" "$T/out" ||
  fail "(d) torch's generator: $(cat "$T/out")"
grep -qE "^    batch +DIFFERS: the DataLoader \(dl.py:7\) shuffles without a generator of its own" "$T/out" || fail "(d) batch: $(cat "$T/out")"
grep -q "save torch.get_rng_state()" "$T/out" && fail "(d) a fix the script already applies: $(cat "$T/out")"

# (e)
cat >bwd.py <<'PYSRC'
import os, sys
import torch
ckpt = sys.argv[1]
torch.manual_seed(0)
X = torch.randn(512, 8, generator=torch.Generator().manual_seed(1))
Y = (X.sum(1) > 0).long()
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
start = 0
if os.path.exists(ckpt):
    c = torch.load(ckpt, weights_only=False)
    model.load_state_dict(c["model"]); opt.load_state_dict(c["opt"]); start = c["step"]
for step in range(start + 1, 41):
    idx = torch.arange((step * 32) % 512, (step * 32) % 512 + 32)
    loss = torch.nn.functional.cross_entropy(model(X[idx]), Y[idx])
    opt.zero_grad()
    loss.backward()
    if step % 10 == 0:
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, ckpt)
    opt.step()
PYSRC
run_rc "$REPRUN" exec -o "$T/e" -q --vary resume=20 -- "$PY" bwd.py '{run_dir}/c.pt'
[[ $RC == 1 ]] || fail "(e) exit $RC: $(cat "$T/out")"
grep -A1 "^Likely cause" "$T/out" | grep -q "saved between backward() and the optimizer's step() (bwd.py:19)" ||
  fail "(e) not the first cause: $(cat "$T/out")"
grep -q "no forward of an nn.Module" "$T/out" && fail "(e) a false reason for no table: $(cat "$T/out")"
grep -q "no boundary table: run-1 saved this checkpoint between backward() and the optimizer's step()" "$T/out" || fail "(e) $(cat "$T/out")"
pass
