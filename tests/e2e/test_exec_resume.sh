# reprun exec --vary resume=N on unmodified PyTorch scripts (Debian's python3-torch on the CPU):
#  (a) examples/python/train_resume.py with nothing left out of its checkpoint passes, every state
#      restored; each --forget switch fails (exit 1) naming the state left out, in the text and the
#      JSON report, with the first divergent step and the op with its line; a draw after the save
#      is "restored to the save" with the drawing op's line;
#  (b) runs that share a checkpoint path are an error (exit 2) naming the path and {run_dir}, in
#      plain exec and under --vary resume, and so is a leftover checkpoint no run stepped from;
#  (c) the refusals: N at or past the end, no checkpoint by step N, a resumed process that started
#      over (and the same with --resume-arg passes), a resumed process that failed;
#  (d) a script whose uninterrupted runs already differ (threads varied) is run-to-run
#      nondeterminism, not a resume defect;
#  (e) a program without the capture (its own step log) is killed by its log and stitched by its
#      step numbers, with no boundary table;
#  (f) a shell script that starts a PyTorch script (not with exec, and going on after it): the
#      capture kills the script's whole process group, as a preemption does, and a step log of the
#      program's own does not have it killed before the save of step N.
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch (apt-get install python3-torch)"
S="$EX/python/train_resume.py"
line_of() { grep -n -- "$2" "$1" | head -1 | cut -d: -f1; }
save_line=$(line_of "$S" 'torch.save(ckpt')
fwd_line=$(line_of "$S" 'loss = loss_fn(model(xb)')

# (a) nothing left out: exit 0, every state restored.
run_rc "$REPRUN" exec -o "$T/ok" -q --vary resume=40 -- "$PY" "$S" --ckpt '{run_dir}/ckpt.pt'
[[ $RC == 0 ]] || fail "(a) nothing left out: exit $RC: $(head -c 3000 "$T/out") $(head -c 2000 "$T/err")"
grep -q '^PASS: 2 runs of the program identical; run-2 killed after step 40 and resumed from step 40: every state restored' "$T/out" ||
  fail "(a) verdict: $(head -1 "$T/out")"
for state in 'parameters' 'optimizer 0 (Adam): state' 'optimizer 0 (Adam): hyperparameters' 'scheduler 0 (StepLR)' \
             'torch CPU generator' 'DataLoader generator (train_resume.py:' 'batch'; do
  grep -qE "^    $(printf '%s' "$state" | sed 's/[()]/\\&/g').* +(restored|same)$" "$T/out" || fail "(a) '$state' not restored: $(cat "$T/out")"
done
[[ $(json_get "$T/ok/run-2/manifest.json" program.argv) == *'{run_dir}/ckpt.pt'* ]] || fail "(a) program.argv is not as written"
[[ $(json_get "$T/ok/run-2/manifest.json" program.argv_expanded) == *"$T/ok/run-2/ckpt.pt"* ]] || fail "(a) no expanded argv"
[[ -s $T/ok/run-2/processes/1/steps.jsonl && -s $T/ok/run-2/processes/2/events.jsonl ]] || fail "(a) per-process records missing: $(find "$T/ok/run-2")"
[[ $(wc -l <"$T/ok/run-2/processes/1/steps.jsonl") == 40 ]] || fail "(a) the killed process did not stop after step 40"
cmp -s "$T/ok/run-1/steps.jsonl" "$T/ok/run-2/steps.jsonl" || fail "(a) the stitched log differs from run-1's"

# check_forget SWITCH STATE OP: exit 1, the state named NOT restored (text and JSON), the op and its line.
check_forget() {
  local switch=$1 state=$2 op=$3 step=$4
  # One exec: the text report on stdout, the JSON report in a file (--json).
  run_rc "$REPRUN" exec -o "$T/f-$switch" -q --vary resume=40 --json "$T/f-$switch.json" -- "$PY" "$S" --ckpt '{run_dir}/ckpt.pt' --forget "$switch"
  [[ $RC == 1 ]] || fail "(a) --forget $switch: exit $RC: $(head -c 2000 "$T/err")"
  "$PY" - "$T/f-$switch.json" "$state" "$op" "$step" "$fwd_line" <<'PYCHECK' || fail "(a) --forget $switch: $(head -c 5000 "$T/f-$switch.json")"
import json, sys
r = json.load(open(sys.argv[1]))
state, op, step, fwd = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
assert r["identical"] is False and r["verdict"].startswith("FAIL"), r["verdict"]
assert "NOT restored: " + state in r["verdict"] or "NOT restored: " in r["verdict"] and state in r["verdict"], r["verdict"]
pair = r["pairs"][0]
res = pair["resume"]
assert res["killed_after"] == 40 and res["resumed_from"] == 40, res
rows = {row["state"]: row for row in res["boundary"]}
bad = [name for name, row in rows.items() if not row["restored"]]
assert any(name.startswith(state) for name in bad), (state, bad)
assert res["numbers_part"] == step, res["numbers_part"]
assert pair["diff"]["divergence"]["step"] == step, pair["diff"]["divergence"]
loc = pair["localization"]
assert loc["found"] and op in loc["sentence"] and "train_resume.py:" in loc["sentence"], loc
assert state in loc["sentence"] or state.lower() in loc["sentence"].lower(), loc["sentence"]
causes = [d["cause"] for d in pair["diff"]["diagnosis"]]
assert state.lower() in causes[0].lower(), causes
assert not any("same inputs" in c for c in causes), causes
PYCHECK
  # The text report says the same.
  grep -qF -- "$state" "$T/out" && grep -q "NOT restored" "$T/out" && grep -q "$op" "$T/out" ||
    fail "(a) --forget $switch: text report: $(cat "$T/out")"
  grep -q "^  the numbers part at step $step$" "$T/out" || fail "(a) --forget $switch: no divergent step: $(cat "$T/out")"
}
check_forget torch-rng 'torch CPU generator' 'aten.bernoulli_' 41
check_forget loader-rng 'DataLoader generator' 'aten.addmm' 41
check_forget scheduler 'scheduler 0 (StepLR)' 'aten.addcdiv_' 61
check_forget optimizer 'optimizer 0 (Adam): state' 'aten.' 41
grep -q "step 41, optimizer, .*train_resume.py:$(line_of "$S" 'opt.step()')" "$T/out" || fail "(a) the optimizer's op has no line: $(head -1 "$T/out")"

# A draw after the save: restored to its state at the save, run-1 drew from it after (the line).
run_rc "$REPRUN" exec -o "$T/draw" -q --vary resume=40 -- "$PY" "$S" --ckpt '{run_dir}/ckpt.pt' --draw-after-save
[[ $RC == 1 ]] || fail "(a) draw after save: exit $RC"
grep -qE "torch CPU generator +restored to the save: run-1 drew from it between the save and the next step \(aten.randperm at .*train_resume.py:$(line_of "$S" 'torch.randperm(n)')\)" "$T/out" ||
  fail "(a) draw after save: $(cat "$T/out")"

# (b) a shared checkpoint path: an error, never a divergence.
mkdir -p "$T/shared"
expect_error "run-2 loaded shared/ckpt.pt .*the bytes run-1 of this exec saved.*\{run_dir\}" \
  "$REPRUN" exec -o "$T/sh1" -q -- "$PY" "$S" --ckpt shared/ckpt.pt
rm -rf "$T/shared"
expect_error "run-2 loaded shared/ckpt.pt .*the bytes run-1 of this exec saved.*\{run_dir\}" \
  "$REPRUN" exec -o "$T/sh2" -q --vary resume=40 -- "$PY" "$S" --ckpt shared/ckpt.pt
# A checkpoint left by an earlier exec at the last epoch: every run loads it and steps no more, so
# nothing was tested (exit 2), the path and the fix named, never a PASS of a file against itself.
expect_error "nothing was tested: no run made an optimizer step, and each went on from shared/ckpt.pt .*a checkpoint no run of this exec saved \(left by an earlier run\).*\{run_dir\}" \
  "$REPRUN" exec -o "$T/sh3" -q -- "$PY" "$S" --ckpt shared/ckpt.pt --epochs 4

# (c) refusals, one line each, exit 2.
expect_error "--vary resume=80: step 80 is at or past run-1's last step \(80\)" \
  "$REPRUN" exec -o "$T/r80" -q --vary resume=80 -- "$PY" "$S" --ckpt '{run_dir}/c.pt'
expect_error "--vary resume=10: run-1 saved no checkpoint by step 10: the first one was saved after step 20" \
  "$REPRUN" exec -o "$T/r10" -q --vary resume=10 -- "$PY" "$S" --ckpt '{run_dir}/c.pt'
sed -e 's/^    if os.path.exists(args.ckpt):/    if args.resume and os.path.exists(args.ckpt):/' \
    -e 's/^    args = ap.parse_args()/    ap.add_argument("--resume", action="store_true")\n    args = ap.parse_args()/' "$S" >told.py
grep -q 'args.resume and' told.py || fail "told.py was not made"
expect_error "--vary resume=40: the resumed process of run-2 loaded no checkpoint of the killed one before its first optimizer step: it started over" \
  "$REPRUN" exec -o "$T/told1" -q --vary resume=40 -- "$PY" told.py --ckpt '{run_dir}/c.pt'
expect_rc 0 "$REPRUN" exec -o "$T/told2" -q --vary resume=40 --resume-arg=--resume -- "$PY" told.py --ckpt '{run_dir}/c.pt'
sed -e 's/^        ckpt = torch.load(args.ckpt)/        ckpt = torch.load(args.ckpt)\n        raise SystemExit("cannot resume: corrupt checkpoint")/' "$S" >broken.py
run_rc "$REPRUN" exec -o "$T/broken" -q --vary resume=40 -- "$PY" broken.py --ckpt '{run_dir}/c.pt'
[[ $RC == 2 ]] || fail "(c) a failed resume: exit $RC"
grep -q "^reprun: error: --vary resume=40: the resumed process of run-2 failed (exit status 1)" "$T/err" || fail "(c) failed resume: $(cat "$T/err")"
grep -q "cannot resume: corrupt checkpoint" "$T/err" || fail "(c) the resumed process's last stderr lines are not shown: $(cat "$T/err")"

# (d) runs that differ before the kill: run-to-run nondeterminism, localized as such.
cat >wide.py <<'PYSRC'
import os, sys
import torch
torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
x = torch.randn(2048, 512, generator=g)
y = torch.randint(0, 10, (2048,), generator=g)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
start = 0
if os.path.exists(sys.argv[1]):
    c = torch.load(sys.argv[1])
    model.load_state_dict(c["model"]); opt.load_state_dict(c["opt"]); start = c["epoch"] + 1
for epoch in range(start, 3):
    for b in range(8):
        idx = torch.arange(b * 64, b * 64 + 64)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[idx] - x.mean()), y[idx])
        loss.backward()
        opt.step()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": epoch}, sys.argv[1])
PYSRC
run_rc "$REPRUN" exec -o "$T/nd" -q --vary resume=16 --vary env:OMP_NUM_THREADS=1,2 -- "$PY" wide.py '{run_dir}/c.pt'
[[ $RC == 1 ]] || fail "(d) exit $RC: $(head -c 2000 "$T/err")"
grep -q "^FAIL: .*run-to-run nondeterminism: its killed process parted from run-1 at step 1, before the kill; .*aten.mean.*threads are 1 in A and 2 in B" "$T/out" ||
  fail "(d) verdict: $(head -1 "$T/out")"
grep -q "NOT restored" "$T/out" && fail "(d) a state blamed on the resume: $(cat "$T/out")"

# (e) no capture: killed by its own step log, stitched by its step numbers, no table.
cat >np_resume.py <<'PYSRC'
import json, os, pickle, sys
import numpy as np
ckpt = sys.argv[1]
rng = np.random.default_rng(0)
w = rng.normal(size=(8, 2)); x = rng.normal(size=(256, 8))
start = 0
if os.path.exists(ckpt):
    with open(ckpt, "rb") as f:
        w, start = pickle.load(f)
log = open(os.environ["REPRUN_STEP_LOG"], "a")
for step in range(start + 1, 41):
    b = x[(step * 16) % 256:(step * 16) % 256 + 16]
    z = b @ w
    w -= 0.01 * b.T @ (2 * z / z.size)
    log.write(json.dumps({"step": step, "loss": float(np.mean(z ** 2))}) + "\n"); log.flush()
    if step % 10 == 0:
        with open(ckpt + ".tmp", "wb") as f:
            pickle.dump((w, step), f)
        os.replace(ckpt + ".tmp", ckpt)
    import time; time.sleep(0.02)
PYSRC
run_rc "$REPRUN" exec -o "$T/np" -q --vary resume=25 -- "$PY" np_resume.py '{run_dir}/c.pkl'
[[ $RC == 0 ]] || fail "(e) exit $RC: $(cat "$T/out") $(cat "$T/err")"
# Killed once its log shows step 25 or later: the kill lands within a few steps (a poll every 20 ms),
# so it resumes from the checkpoint of step 20, or 30 on a loaded machine.
grep -qE "^PASS: .*run-2 killed after step 25 and resumed from step (20|30): no boundary table: the program ran without reprun's capture" "$T/out" ||
  fail "(e) verdict: $(head -1 "$T/out")"
grep -qE "killed \(SIGKILL\) once its step log showed step 25 or later \(it had logged step (2[5-9]|3[0-9])\), resumed at step (21|31)" "$T/out" ||
  fail "(e) the kill and the resume are not described: $(cat "$T/out")"
cmp -s "$T/np/run-1/steps.jsonl" "$T/np/run-2/steps.jsonl" || fail "(e) the stitched log differs from run-1's"

# (f) through a shell script. wrapped.py saves every 10 steps, a while after it logs the step (with
# --own-log, in REPRUN_STEP_LOG): killed at its log's step 20, it would resume from step 10.
cat >wrapped.py <<'PYSRC'
import json, os, sys, time
import torch
ckpt, own_log = sys.argv[1], "--own-log" in sys.argv
torch.manual_seed(0)
model = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(256, 8), torch.randn(256, 2)
start = 0
if os.path.exists(ckpt):
    c = torch.load(ckpt)
    model.load_state_dict(c["model"]); opt.load_state_dict(c["opt"]); start = c["step"]
log = open(os.environ["REPRUN_STEP_LOG"], "a") if own_log else None
for step in range(start + 1, 41):
    b = slice((step * 16) % 256, (step * 16) % 256 + 16)
    loss = torch.nn.functional.mse_loss(model(x[b]), y[b])
    opt.zero_grad(); loss.backward(); opt.step()
    if log:
        log.write(json.dumps({"step": step, "loss": loss.item()}) + "\n"); log.flush()
    if step % 10 == 0:
        time.sleep(0.3)
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, ckpt)
PYSRC
printf '#!/bin/bash\n"%s" wrapped.py "$@"\necho "the script went on"\n' "$PY" >wrap.sh
chmod +x wrap.sh
for own in "" --own-log; do
  run_rc "$REPRUN" exec -o "$T/wrap$own" -q --vary resume=20 -- ./wrap.sh '{run_dir}/c.pt' $own
  [[ $RC == 0 ]] || fail "(f) wrap.sh $own: exit $RC: $(cat "$T/out") $(cat "$T/err")"
  grep -q "^PASS: 2 runs of the program identical; run-2 killed after step 20 and resumed from step 20: every state restored" "$T/out" ||
    fail "(f) wrap.sh $own: verdict: $(head -1 "$T/out")"
  # run-2's output: the killed process's, then the resumed one's, which ends the script.
  [[ $(grep -c "the script went on" "$T/wrap$own/run-2/stdout.txt") == 1 ]] ||
    fail "(f) wrap.sh $own: the script went on after its Python process was killed: $(cat "$T/wrap$own/run-2/stdout.txt")"
done
pass
