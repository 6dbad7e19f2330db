# reprun exec and diff name the cause that fits what the program did:
#  (a) arguments compared element by element ("--lr 0.01 -> 0.03"), never "a different build"; a
#      config given as --config=cfg.json is fingerprinted and its change named; a value longer than
#      the report's column shows where it differs, not only its prefix;
#  (b) random_split with a generator seeded from entropy (generator.seed()) in a script that calls
#      torch.manual_seed: the generator's seeds are named, the fix seeds that generator, and
#      repro.py's fix is to seed it (not to swap in torch's default generator);
#  (c) no torch.manual_seed: model init differs before any step: "before the first step
#      (initialization)", classified initial state;
#  (d) a pinned run against a --no-pin run counts PYTHONHASHSEED once, with a shell command as the
#      fix; a built-in run against an exec run is one line: different kinds;
#  (e) a numpy program whose order comes from a set of strings under --no-pin: PYTHONHASHSEED first,
#      no torch advice; random.shuffle unseeded: Python's random named;
#  (f) exec reports: the HTML names the program (not "config"), no built-in-only notes.
#  (g) a script that resumes from its checkpoint when it is there, recorded twice in one folder:
#      the second run read the checkpoint the first wrote and made no step; the first cause names
#      the file and the run that wrote it, not only "its loop ended earlier".
#  (h) a shell script that starts the Python program (`cd sub && exec python3 ../train.py`): its
#      optimizer steps are recorded (the capture is armed for every program, not only one that is
#      Python itself), so that a diff names the step where two records part, and the changed data;
#      a PASS names the PYTHONHASHSEED pin it held.
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch"
line_of() { grep -n -- "$2" "$1" | head -1 | cut -d: -f1; }

# (a)
cat >lr.py <<'PYSRC'
import argparse, json
import torch
p = argparse.ArgumentParser()
p.add_argument("--name"); p.add_argument("--lr", type=float, default=0.01); p.add_argument("--config")
a = p.parse_args()
extra = json.load(open(a.config)) if a.config else {}
torch.manual_seed(0)
m = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(m.parameters(), lr=a.lr * extra.get("scale", 1.0))
x = torch.randn(16, 4)
for step in range(3):
    loss = m(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
PYSRC
long=an-experiment-name-long-enough-to-push-the-learning-rate-past-the-column
echo '{"scale": 1.0}' >cfg.json
expect_rc 0 "$REPRUN" exec -o "$T/a1" -q -- "$PY" lr.py --name $long --lr 0.01 --config=cfg.json
expect_rc 0 "$REPRUN" exec -o "$T/a2" -q -- "$PY" lr.py --name $long --lr 0.03 --config=cfg.json
echo '{"scale": 2.0}' >cfg.json
expect_rc 0 "$REPRUN" exec -o "$T/a3" -q -- "$PY" lr.py --name $long --lr 0.01 --config=cfg.json
NO_COLOR=1 expect_rc 1 "$REPRUN" diff "$T/a1/run-1" "$T/a2/run-1"
grep -q "^  1. the program's arguments changed: --lr 0.01 -> 0.03$" "$T/out" || fail "(a) arguments: $(cat "$T/out")"
grep -q "a different build" "$T/out" && fail "(a) a different build: $(cat "$T/out")"
grep -qE '^  \[arguments\] program.argv: .*"0.01".* -> .*"0.03"' "$T/out" || fail "(a) the differing value is cut off: $(cat "$T/out")"
NO_COLOR=1 expect_rc 1 "$REPRUN" diff "$T/a1/run-1" "$T/a3/run-1"
grep -q "^  1. a configuration file the program's arguments name changed: cfg.json (line 1 changed (1 line in both))$" "$T/out" || fail "(a) --config=: $(cat "$T/out")"

# (b)
cat >split.py <<'PYSRC'
import torch
torch.manual_seed(123)
X = torch.randn(256, 8)
Y = (X.sum(1) > 0).long()
split_gen = torch.Generator()
split_gen.seed()
train, val = torch.utils.data.random_split(torch.utils.data.TensorDataset(X, Y), [200, 56], generator=split_gen)
loader = torch.utils.data.DataLoader(train, batch_size=32)
model = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for xb, yb in loader:
    loss = torch.nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad(); loss.backward(); opt.step()
PYSRC
run_rc "$REPRUN" exec -o "$T/b" -q --format json -- "$PY" split.py
[[ $RC == 1 ]] || fail "(b) exit $RC"
"$PY" - "$T/out" "split.py:$(line_of split.py random_split)" <<'PYCHECK' || fail "(b) $(head -c 4000 "$T/out")"
import json, sys
pair = json.load(open(sys.argv[1]))["pairs"][0]
loc = pair["localization"]
s = loc["sentence"]
assert s.startswith("before the first step (initialization), " + sys.argv[2] + ": aten.randperm"), s
assert "the torch.Generator the program passed to it (generator=), seeded differently" in s and "initial_seed()" in s, s
fix = pair["diff"]["diagnosis"][0]["fix"]
assert "generator.manual_seed(SEED)" in fix and "torch.manual_seed(SEED) with a fixed SEED" not in fix, fix
assert pair["diff"]["divergence"]["classification"] == "initial state", pair["diff"]["divergence"]
PYCHECK
repro=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['pairs'][0]['localization']['repro'])" "$T/out")
"$PY" "$repro" 4 >"$T/repro.out" 2>&1 || fail "(b) repro.py: $(cat "$T/repro.out")"
grep -q "^with the fix (its generator made with manual_seed(0)): 4 runs, 1 distinct output$" "$T/repro.out" ||
  fail "(b) repro.py's fix: $(cat "$T/repro.out")"
grep -q "^without the fix.*: 4 runs, 4 distinct outputs$" "$T/repro.out" || fail "(b) repro.py: $(cat "$T/repro.out")"

# (c)
cat >noseed.py <<'PYSRC'
import torch
X = torch.randn(64, 8, generator=torch.Generator().manual_seed(1))
Y = (X.sum(1) > 0).long()
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = torch.nn.functional.cross_entropy(model(X), Y)
    opt.zero_grad(); loss.backward(); opt.step()
PYSRC
# (f)'s HTML report is written by this exec too.
run_rc "$REPRUN" exec -o "$T/c" -q --html "$T/f.html" -- "$PY" noseed.py
[[ $RC == 1 ]] || fail "(c) exit $RC"
head -1 "$T/out" | grep -qE "run-2: before the first step \(initialization\), noseed.py:4[:,].*aten\.(uniform_|kaiming_uniform_|normal_) — " ||
  fail "(c) $(head -1 "$T/out")"
grep -q "^DIFFERENT: runs part at step 1 (initial state)" "$T/out" || fail "(c) classification: $(cat "$T/out")"
# (f) the reports of this exec.
grep -q "<p>program <code>" "$T/f.html" || fail "(f) the HTML does not name the program: $(grep -o '<p>[a-z]* <code>' "$T/f.html")"
grep -q "no step-0 record" "$T/out" && fail "(f) a built-in note: $(cat "$T/out")"
grep -q "trace full names its origin" "$T/out" && fail "(f) a built-in hint: $(cat "$T/out")"

# (d)
cat >plain.py <<'PYSRC'
import torch
torch.manual_seed(0)
m = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for step in range(2):
    loss = m(torch.ones(4, 2)).sum()
    opt.zero_grad(); loss.backward(); opt.step()
PYSRC
expect_rc 0 "$REPRUN" exec -o "$T/d1" -q --keep -- "$PY" plain.py
expect_rc 0 "$REPRUN" exec -o "$T/d2" -q --no-pin --keep -- "$PY" plain.py
NO_COLOR=1 run_rc "$REPRUN" diff "$T/d1/run-1" "$T/d2/run-1"
grep -q "PYTHONHASHSEED.source=" "$T/out" && fail "(d) not a shell command: $(cat "$T/out")"
[[ $(grep -c "^  [0-9]*\. unpinned environment variable: PYTHONHASHSEED" "$T/out") == 1 ]] || fail "(d) PYTHONHASHSEED named other than once: $(cat "$T/out")"
grep -q "export PYTHONHASHSEED=0 before both runs" "$T/out" || fail "(d) fix: $(cat "$T/out")"
small_config cfg-train.json
expect_rc 0 "$REPRUN" train cfg-train.json -o "$T/builtin" -q
NO_COLOR=1 expect_rc 1 "$REPRUN" diff "$T/builtin" "$T/d1/run-1"
grep -q "^  1. the runs are of different kinds: A is a built-in trainer run (reprun train), B a program run by reprun exec" "$T/out" ||
  fail "(d) kinds: $(cat "$T/out")"
# The headline says the runs are of different kinds first, then what their step logs gave (this
# program's log holds no loss of the built-in trainer's: "run ended early" alone was false).
grep -q "^DIFFERENT: runs of different kinds (A reprun train, B reprun exec); " "$T/out" ||
  fail "(d) kinds headline: $(head -1 "$T/out")"
[[ $(grep -c "^  [0-9]*\. " "$T/out") == 1 ]] || fail "(d) more than one cause: $(cat "$T/out")"

# (e)
cat >setorder.py <<'PYSRC'
import json, os
import numpy as np
words = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
w = np.zeros(1)
log = open(os.environ["REPRUN_STEP_LOG"], "a")
for step, word in enumerate(words, 1):
    w = w - 0.1 * (w - len(word) * step)
    log.write(json.dumps({"step": step, "loss": float(w[0])}) + "\n")
PYSRC
run_rc "$REPRUN" exec -o "$T/e" -q --no-pin --runs 3 -- "$PY" setorder.py
[[ $RC == 1 ]] || fail "(e) set order: exit $RC (the three runs agreed?)"
grep -m1 -A1 "^Likely cause" "$T/out" | grep -q "1. PYTHONHASHSEED is unset" || fail "(e) not first: $(cat "$T/out")"
# The program line names the interpreter, which on the torch2 leg lives in a venv named for torch.
grep -vF -- "$PY" "$T/out" | grep -qi "torch" && fail "(e) torch advice for a numpy program: $(cat "$T/out")"
cat >shuffle.py <<'PYSRC'
import json, os, random
data = list(range(16))
random.shuffle(data)
log = open(os.environ["REPRUN_STEP_LOG"], "a")
w = 0.0
for step in range(1, 5):
    w = w - 0.1 * (w - sum(data[step * 4 - 4:step * 4]))
    log.write(json.dumps({"step": step, "loss": w}) + "\n")
PYSRC
run_rc "$REPRUN" exec -o "$T/e2" -q -- "$PY" shuffle.py
[[ $RC == 1 ]] || fail "(e) shuffle: exit $RC"
grep -q "random.seed(SEED) for Python's random" "$T/out" || fail "(e) Python's random not named: $(cat "$T/out")"

# (g)
cat >resumes.py <<'PYSRC'
import os
import torch
torch.manual_seed(0)
m = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
start = 0
if os.path.exists("ckpt.pt"):
    s = torch.load("ckpt.pt")
    m.load_state_dict(s["m"]); opt.load_state_dict(s["o"]); start = s["epoch"]
x = torch.randn(16, 4)
for epoch in range(start, 3):
    loss = m(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    torch.save({"m": m.state_dict(), "o": opt.state_dict(), "epoch": epoch + 1}, "ckpt.pt")
PYSRC
rm -f ckpt.pt
expect_rc 0 "$REPRUN" exec --runs 1 -o "$T/g1" -q -- "$PY" resumes.py
expect_rc 0 "$REPRUN" exec --runs 1 -o "$T/g2" -q -- "$PY" resumes.py
rm -f ckpt.pt
NO_COLOR=1 expect_rc 1 "$REPRUN" diff "$T/g1/run-1" "$T/g2/run-1"
grep -m1 -A2 "^Likely cause" "$T/out" | grep -q "^  1. run B read ckpt.pt, which run A wrote (the same bytes): it went on from where A ended, as from a checkpoint, and made 0 optimizer steps against 3$" ||
  fail "(g) the checkpoint B read is not the first cause: $(cat "$T/out")"
grep -q "fix: remove ckpt.pt before each record, or give each run its own (exec replaces {run_dir} in the program's arguments: {run_dir}/ckpt.pt)" "$T/out" ||
  fail "(g) fix: $(cat "$T/out")"
grep -q "^  2. the program made fewer optimizer steps in run B (0 against 3)" "$T/out" || fail "(g) second cause: $(cat "$T/out")"

# (h)
mkdir -p wrap/sub
printf '1 2 3 4\n5 6 7 8\n' >wrap/table.txt
cat >wrap/train.py <<'PYSRC'
import numpy as np
import torch
x = torch.from_numpy(np.loadtxt("../table.txt", dtype=np.float32))
torch.manual_seed(0)
m = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
for _ in range(3):
    loss = m(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
PYSRC
printf '#!/bin/sh\ncd sub && exec "$1" ../train.py\n' >wrap/run.sh
chmod +x wrap/run.sh
(cd wrap && expect_rc 0 "$REPRUN" exec --runs 1 -o "$T/h1" -- ./run.sh "$PY") || exit 1
grep -q "^RECORDED: run-1 of the program in .* (3 step records, read 1 data file and 2 code files)" "$T/out" ||
  fail "(h) the wrapped program's steps: $(cat "$T/out")"
printf '1 2 3 4\n5 6 7 9\n' >wrap/table.txt
(cd wrap && expect_rc 0 "$REPRUN" exec --runs 1 -o "$T/h2" -q -- ./run.sh "$PY") || exit 1
NO_COLOR=1 expect_rc 1 "$REPRUN" diff "$T/h1/run-1" "$T/h2/run-1"
grep -q "^DIFFERENT: runs part at step 1 (computation)" "$T/out" || fail "(h) no step compared: $(cat "$T/out")"
grep -q "^  1. the training data changed (table.txt: line 2 changed (2 lines in both))" "$T/out" || fail "(h) data: $(cat "$T/out")"
(cd wrap && expect_rc 0 "$REPRUN" exec -o "$T/h3" -q -- ./run.sh "$PY") || exit 1
grep -q "^PASS: 2 runs of the program identical, with PYTHONHASHSEED=0 pinned" "$T/out" || fail "(h) pins: $(cat "$T/out")"

pass
