# reprun exec on unmodified PyTorch scripts (no reprun import): the automatic step log, the
# framework facts, and the op-level localization (Debian's python3-torch 1.13 on the CPU).
#  (a) a wide MLP whose batches are centred on the data set's mean (a 2048x512 reduction, which torch
#      splits by thread on every machine, before any matmul, whose thread dependence is the BLAS
#      kernel's) at OMP_NUM_THREADS=1 vs 2 is localized to aten.mean and its line, with the thread
#      counts named; repro.py shows 2 distinct outputs across the thread counts, 1 with the fix; a
#      small script whose numbers do not depend on the thread count passes, the thread facts
#      listed as varied on purpose, never counted;
#  (b) a planted non-deterministic op (a draw from a clock-seeded generator) is localized to that
#      op and line; data that differs (unpinned PYTHONHASHSEED) is traced to outside torch's ops;
#  (c) the same script, pinned deterministic, passes;
#  (d) a script writing its own step log keeps it (the automatic one is dropped).
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch (apt-get install python3-torch)"

cat >wide.py <<'PY'
import torch
torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
x = torch.randn(2048, 512, generator=g)
y = torch.randint(0, 10, (2048,), generator=g)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    idx = torch.arange(step * 64, step * 64 + 64)
    opt.zero_grad()
    xb = x[idx] - x.mean()
    out = model(xb)
    loss = torch.nn.functional.cross_entropy(out, y[idx])
    loss.backward()
    opt.step()
print("loss", loss.item())
PY
line_of() { grep -n -- "$2" "$1" | head -1 | cut -d: -f1; }
json() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# (a) threads
run_rc "$REPRUN" exec -o "$T/a" --format json -q --vary env:OMP_NUM_THREADS=1,2 -- "$PY" wide.py
cp "$T/out" "$T/a.json"
[[ $RC == 1 ]] || fail "(a) expected the runs at 1 and 2 threads to differ (torch's matmul splits across threads), exit $RC: $(head -c 2000 "$T/out") $(head -c 2000 "$T/err")"
sentence=$(json "$T/a.json" 'd["pairs"][0]["localization"]["sentence"]')
[[ $sentence == "step 1, forward, wide.py:$(line_of wide.py 'x.mean()'): aten.mean — "* ]] ||
  fail "(a) not localized to the reduction and its line: $sentence"
[[ $sentence == *"same inputs, different outputs"* && $sentence == *"threads are 1 in A and 2 in B"* ]] ||
  fail "(a) the thread counts are not named: $sentence"
"$PY" - "$T/a.json" <<'PYCHECK' || fail "(a) the thread facts: $(head -c 6000 "$T/a.json")"
import json, sys
pair = json.load(open(sys.argv[1]))["pairs"][0]
meta = {m["key"]: m for m in pair["diff"]["metadata"]}
assert meta["framework.determinism.intra_op_threads"]["kind"] == "varied", meta
assert not [m for m in pair["diff"]["metadata"] if m["kind"] == "material" and m["category"] != "outputs"], "a varied fact counted"
causes = [d["cause"] for d in pair["diff"]["diagnosis"]]
assert all("same inputs and environment" not in c for c in causes), causes
assert any("OMP_NUM_THREADS is 1 in A and 2 in B" in c and "intra_op_threads 1 -> 2" in c for c in causes), causes
PYCHECK
# Numbers that do not depend on the thread count (a small model): PASS, the thread facts varied.
cat >small.py <<'PY'
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
x = torch.randn(64, 8)
y = (x.sum(1) > 0).long()
for step in range(4):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
PY
expect_rc 0 "$REPRUN" exec -o "$T/a0" -q --vary env:OMP_NUM_THREADS=1,2 -- "$PY" small.py
grep -q "^PASS: 2 runs of the program identical" "$T/out" || fail "(a) equal numbers: $(cat "$T/out")"
grep -q "IDENTICAL: 4 step records bitwise identical, metadata matches but for what was varied on purpose (OMP_NUM_THREADS 1 -> 2, torch's intra_op_threads 1 -> 2)" "$T/out" ||
  fail "(a) equal numbers: the varied facts are not listed: $(cat "$T/out")"
[[ $(json "$T/a/run-1/manifest.json" 'd["program"]["step_log"]') == automatic ]] || fail "(a) no automatic step log"
# torch.utils.deterministic.fill_uninitialized_memory exists from torch 2.1 on: null before, its value after.
fill=$(json "$T/a/run-1/manifest.json" 'd["framework"]["determinism"]["fill_uninitialized_memory"]')
if "$PY" -c "import sys, torch; sys.exit(0 if tuple(map(int, torch.__version__.split('.')[:2])) >= (2, 1) else 1)"; then
  [[ $fill == True || $fill == False ]] || fail "(a) fill_uninitialized_memory must be a flag on torch >= 2.1: $fill"
else
  [[ $fill == None ]] || fail "(a) fill_uninitialized_memory must be null before torch 2.1: $fill"
fi
grep -q '"0.weight":{"checksum"' "$T/a/run-1/steps.jsonl" || fail "(a) parameters not named by module path"
repro=$(json "$T/a.json" 'd["pairs"][0]["localization"]["repro"]')
[[ -f $repro ]] || fail "(a) no repro.py: $repro"
"$PY" "$repro" 5 >"$T/repro.out" 2>&1 || fail "(a) repro.py failed: $(cat "$T/repro.out")"
grep -qE "^without the fix.*: 10 runs, 2 distinct outputs" "$T/repro.out" || fail "(a) repro without fix: $(cat "$T/repro.out")"
grep -qE "^with the fix.*: 5 runs, 1 distinct output$" "$T/repro.out" || fail "(a) repro with fix: $(cat "$T/repro.out")"

# (b) a planted non-deterministic op; (c) the same script with it seeded passes
cat >planted.py <<'PY'
import os, time
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
x = torch.randn(64, 8)
y = (x.sum(1) > 0).long()
seed = time.time_ns() if os.environ.get("PLANT") == "1" else 7
for step in range(4):
    noise = torch.randn(x.shape, generator=torch.Generator().manual_seed(seed + step))
    loss = torch.nn.functional.cross_entropy(model(x + 0.1 * noise), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
PY
run_rc "$REPRUN" exec -o "$T/b" --format json -q --pin PLANT=1 -- "$PY" planted.py
cp "$T/out" "$T/b.json"
[[ $RC == 1 ]] || fail "(b) the planted op did not make the runs differ, exit $RC: $(head -c 2000 "$T/err")"
sentence=$(json "$T/b.json" 'd["pairs"][0]["localization"]["sentence"]')
[[ $sentence == *"planted.py:$(line_of planted.py 'noise = torch.randn')"*"aten.randn"*"same inputs, different outputs"*"random draw"* ]] ||
  fail "(b) not localized to the planted draw: $sentence"
repro=$(json "$T/b.json" 'd["pairs"][0]["localization"]["repro"]')
"$PY" "$repro" 5 >"$T/repro.out" 2>&1 || fail "(b) repro.py failed: $(cat "$T/repro.out")"
grep -qE "^without the fix.*: 5 runs, 5 distinct outputs" "$T/repro.out" || fail "(b) repro without fix: $(cat "$T/repro.out")"
grep -qE "^with the fix.*: 5 runs, 1 distinct output$" "$T/repro.out" || fail "(b) repro with fix: $(cat "$T/repro.out")"
expect_rc 0 "$REPRUN" exec -o "$T/c" -q --pin PLANT=0 -- "$PY" planted.py
grep -q '^PASS: 2 runs of the program identical' "$T/out" || fail "(c) $(head -1 "$T/out")"

# (b) data from outside torch: the order of a set of strings follows PYTHONHASHSEED
cat >hashseed.py <<'PY'
import torch
torch.manual_seed(0)
words = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
model = torch.nn.Linear(1, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.tensor([[float(len(w) * i)] for i, w in enumerate(words)])
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
PY
run_rc "$REPRUN" exec -o "$T/h" --format json -q --no-pin --runs 3 -- "$PY" hashseed.py
cp "$T/out" "$T/h.json"
[[ $RC == 1 ]] || fail "(b) unpinned PYTHONHASHSEED gave identical runs 3 times (exit $RC)"
sentence=$("$PY" -c "import json,sys; print([p['localization']['sentence'] for p in json.load(open(sys.argv[1]))['pairs'] if p['localization']][0])" "$T/h.json")
[[ $sentence == *"its inputs already differ"*"not made by a traced op"* ]] || fail "(b) data origin: $sentence"

# (d) a script that writes its own step log keeps it
expect_rc 0 "$REPRUN" exec -o "$T/d" -q -- "$PY" "$REPRUN_SRC/examples/python/train_torch.py"
[[ $(json "$T/d/run-1/manifest.json" 'd["program"]["step_log"]') == program ]] || fail "(d) the program's log lost"
grep -q '"sha256"' "$T/d/run-1/steps.jsonl" || fail "(d) the program's own records were replaced"
[[ ! -e $T/d/run-1/capture-steps.jsonl ]] || fail "(d) the automatic log was left behind"
[[ $(json "$T/d/run-1/manifest.json" '"torch" in d["framework"]') == True ]] || fail "(d) no framework facts"

# A program that never imports torch: capture does nothing (torch stays unimported) but record
# the interpreter's packages, and a sitecustomize of the user's own still runs.
mkdir -p own && echo 'import sys; sys.stderr.write("own sitecustomize ran\n")' >own/sitecustomize.py
echo 'import sys; print("torch imported:", "torch" in sys.modules)' >plain.py
PYTHONPATH="$T/own" expect_rc 0 "$REPRUN" exec -o "$T/p" -- "$PY" plain.py
grep -q "torch imported: False" "$T/p/run-1/stdout.txt" || fail "capture imported torch: $(cat "$T/p/run-1/stdout.txt")"
grep -q "own sitecustomize ran" "$T/p/run-1/stderr.txt" || fail "the user's sitecustomize did not run"
# Its framework facts are its interpreter's and packages only (issue 36: every Python program's).
[[ $(json "$T/p/run-1/manifest.json" 'd["framework"]["name"] == "python" and "torch" not in d["framework"] and d["framework"]["distributions"]["count"] > 0') == True ]] ||
  fail "framework facts of a program without torch: $(json "$T/p/run-1/manifest.json" 'd.get("framework")')"

# The installed layout: bin/reprun finds share/reprun/python.
build=$(dirname "$REPRUN")
cmake --install "$build" --prefix "$T/inst" >/dev/null || fail "cmake --install"
[[ -f $T/inst/share/reprun/python/reprun_capture/capture.py ]] || fail "the package is not installed"
expect_rc 0 "$T/inst/bin/reprun" exec -o "$T/i" -q -- "$PY" planted.py
[[ $(json "$T/i/run-1/manifest.json" 'd["program"]["step_log"]') == automatic ]] || fail "installed: no automatic step log"
pass
