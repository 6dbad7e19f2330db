# reprun exec on a program that uses torch.compile (torch 2.x: the torch2 leg; torch 1.13 has no
# compiler). The capture's global module hooks return at once while torch.compile traces them, so
# compiling works under exec and the numbers are the program's own; compiled code runs kernels the
# op trace cannot see, so the replays run with compilation off (TORCHDYNAMO_DISABLE=1) and say so.
#  (a) a compiled model: PASS, the automatic step log names parameters as the eager model does
#      ("0.weight", not "_orig_mod.0.weight"), the facts say "compiled";
#  (b) a clock-seeded draw outside the compiled model: localized to it and its line, with the note
#      that the replays ran with compilation off and no op up to it ran in compiled code;
#  (c) dropout inside the compiled model drawing from a clock-seeded generator: the replays find
#      the op with compilation off, but nothing shows that the compiled kernels give those numbers:
#      no op is claimed; the report says how to localize inside the compiled code.
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch"
"$PY" -c "import sys, torch; sys.exit(0 if hasattr(torch, 'compile') else 1)" 2>/dev/null ||
  skip "torch.compile is torch 2.x's (the torch2 leg); this python3 has torch $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
line_of() { grep -n -- "$2" "$1" | head -1 | cut -d: -f1; }

cat >compiled.py <<'PYSRC'
import os, time
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(0.2), torch.nn.Linear(32, 2))
cmodel = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 16)
y = (x.sum(1) > 0).long()
if os.environ.get("PLANT") == "inside":
    torch.manual_seed(time.time_ns() % 2**31)
seed = time.time_ns() if os.environ.get("PLANT") == "outside" else 7
for step in range(3):
    noise = torch.randn(x.shape, generator=torch.Generator().manual_seed(seed + step))
    loss = torch.nn.functional.cross_entropy(cmodel(x + 0.1 * noise), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
PYSRC

# (a)
run_rc "$REPRUN" exec -o "$T/a" -q -- "$PY" compiled.py
[[ $RC == 0 ]] || fail "(a) exit $RC: $(cat "$T/out") $(tail -20 "$T/err")"
grep -q "^PASS: 2 runs of the program identical" "$T/out" || fail "(a) $(cat "$T/out")"
grep -q "IDENTICAL: 3 step records bitwise identical" "$T/out" || fail "(a) no step log compared: $(cat "$T/out")"
grep -q '"0.weight":{"checksum"' "$T/a/run-1/steps.jsonl" || fail "(a) parameters not named as the eager model's: $(head -1 "$T/a/run-1/steps.jsonl")"
[[ $(json_get "$T/a/run-1/manifest.json" framework.compiled) == true ]] || fail "(a) the facts do not say compiled"

# (b)
run_rc "$REPRUN" exec -o "$T/b" -q --pin PLANT=outside --format json -- "$PY" compiled.py
[[ $RC == 1 ]] || fail "(b) exit $RC: $(head -c 3000 "$T/out") $(tail -20 "$T/err")"
"$PY" - "$T/out" "compiled.py:$(line_of compiled.py 'noise = torch.randn')" <<'PYCHECK' || fail "(b) $(head -c 5000 "$T/out")"
import json, sys
loc = json.load(open(sys.argv[1]))["pairs"][0]["localization"]
assert loc["found"] and loc["sentence"].startswith("step 1, forward, " + sys.argv[2] + ": aten.randn"), loc
assert "compilation off (TORCHDYNAMO_DISABLE=1" in loc["note"] and "no op up to this one runs in compiled code" in loc["note"], loc
PYCHECK

# (c)
run_rc "$REPRUN" exec -o "$T/c" -q --pin PLANT=inside --format json -- "$PY" compiled.py
[[ $RC == 1 ]] || fail "(c) exit $RC: $(head -c 3000 "$T/out") $(tail -20 "$T/err")"
"$PY" - "$T/out" <<'PYCHECK' || fail "(c) $(head -c 5000 "$T/out")"
import json, sys
loc = json.load(open(sys.argv[1]))["pairs"][0]["localization"]
assert not loc["found"], loc
n = loc["note"]
assert "torch.compile'd code" in n and "TORCHDYNAMO_DISABLE=1" in n and "aten.bernoulli_" in n, n
assert "an op of the compiled code" in n and "need not be where the compiled runs part" in n, n
PYCHECK
pass
