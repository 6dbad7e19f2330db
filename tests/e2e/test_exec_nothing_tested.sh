# reprun exec never says PASS where nothing was compared:
#  (a) --artifact '{run_dir}/final.pt': {run_dir} is expanded, so each run's own file is compared
#      (two final models that differ fail, exit 1); an artifact a run that exited 0 did not leave is
#      an error (exit 2) naming it;
#  (b) a checkpoint left by an earlier run that every run loads and trains no step from: exit 2,
#      naming the file and {run_dir};
#  (c) --ignore-meta is accepted, as by diff, and a key that matches nothing is refused.
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch"

cat >art.py <<'PYSRC'
import os, sys, time
import torch
torch.manual_seed(0)
out = sys.argv[1]
m = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(16, 4)
for step in range(3):
    loss = m(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
if os.environ.get("PLANT") == "1":  # the saved model differs, the step log does not
    with torch.no_grad():
        m.weight.add_(time.time_ns() % 1000 * 1e-9)
os.makedirs(out, exist_ok=True)
torch.save(m.state_dict(), os.path.join(out, "final.pt"))
PYSRC
run_rc "$REPRUN" exec -o "$T/a" -q --pin PLANT=1 --artifact '{run_dir}/o/final.pt' -- "$PY" art.py '{run_dir}/o'
[[ $RC == 1 ]] || fail "(a) two different final models passed, exit $RC: $(cat "$T/out")"
grep -q "outputs.artifacts" "$T/out" || fail "(a) the artifact is not named: $(cat "$T/out")"
grep -q '"path": "{run_dir}/o/final.pt"' "$T/a/run-1/manifest.json" || fail "(a) the artifact's path as written: $(cat "$T/a/run-1/manifest.json")"
grep -q '"missing"' "$T/a/run-1/manifest.json" && fail "(a) recorded missing"
expect_error "run-1: --artifact \{run_dir\}/o/nope.pt: the program exited 0 but left no such file" \
  "$REPRUN" exec -o "$T/a2" -q --artifact '{run_dir}/o/nope.pt' -- "$PY" art.py '{run_dir}/o'

cat >left.py <<'PYSRC'
import os, sys
import torch
ckpt = sys.argv[1]
torch.manual_seed(0)
m = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
start = 0
if os.path.exists(ckpt):
    c = torch.load(ckpt, weights_only=False)
    m.load_state_dict(c["m"]); opt.load_state_dict(c["o"]); start = c["step"]
x = torch.randn(16, 4)
for step in range(start, 5):
    loss = m(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    os.makedirs(os.path.dirname(ckpt), exist_ok=True)
    torch.save({"m": m.state_dict(), "o": opt.state_dict(), "step": step + 1}, ckpt)
PYSRC
"$PY" left.py ckpt/c.pt || fail "(b) the earlier run failed"
expect_error "nothing was tested: no run made an optimizer step, and each went on from ckpt/c.pt \(loaded at left.py:9\), a checkpoint no run of this exec saved .*\{run_dir\}" \
  "$REPRUN" exec -o "$T/b" -q -- "$PY" left.py ckpt/c.pt

run_rc "$REPRUN" exec -o "$T/c" -q --pin PLANT=1 --ignore-meta outputs.artifacts --artifact '{run_dir}/o/final.pt' -- "$PY" art.py '{run_dir}/o'
[[ $RC == 0 ]] || fail "(c) --ignore-meta outputs.artifacts: exit $RC: $(cat "$T/out") $(cat "$T/err")"
expect_error "--ignore-meta outputz" "$REPRUN" exec -o "$T/c2" -q --ignore-meta outputz -- "$PY" art.py '{run_dir}/o'
pass
