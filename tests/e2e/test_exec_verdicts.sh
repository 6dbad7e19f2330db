# What exec's verdicts say on plain PyTorch scripts (Debian's python3-torch on the CPU):
#  (a) an unseeded numpy draw makes an op's inputs differ: the cause list follows the op trace and
#      never offers "same inputs ... different numbers" after it; the loss's magnitude is read in its
#      own precision (float32 ULPs, the relative error first);
#  (b) a run that made no optimizer step lacks the devices the other recorded: named "not recorded
#      in B", never a metadata difference nor a cause.
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch (apt-get install python3-torch)"
"$PY" -c "import numpy" 2>/dev/null || skip "no numpy"

cat >noisy.py <<'PY'
import numpy as np
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 8)
y = (x.sum(1) > 0).long()
for step in range(3):
    noise = torch.from_numpy(np.random.randn(64, 8).astype("float32"))
    loss = torch.nn.functional.cross_entropy(model(x + 0.1 * noise), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
PY
line_of() { grep -n -- "$2" "$1" | head -1 | cut -d: -f1; }

run_rc "$REPRUN" exec -o "$T/a" --format json -q -- "$PY" noisy.py
[[ $RC == 1 ]] || fail "(a) expected the unseeded draw to make the runs differ, exit $RC: $(head -c 2000 "$T/err")"
cp "$T/out" "$T/a.json"
"$PY" - "$T/a.json" "$(line_of noisy.py 'noise = torch')" <<'PYCHECK' || fail "(a) $(head -c 4000 "$T/a.json")"
import json, sys
r = json.load(open(sys.argv[1]))
pair = r["pairs"][0]
loc = pair["localization"]
assert "its inputs already differ" in loc["sentence"] and f"noisy.py:{sys.argv[2]}" in loc["sentence"], loc["sentence"]
causes = [d["cause"] for d in pair["diff"]["diagnosis"]]
assert causes and "inputs of this op already differ" in causes[0], causes
assert not any("same inputs" in c for c in causes), causes
d = pair["diff"]["divergence"]
assert d["loss_ulp_format"] == "float32", d
assert 0 < d["loss_ulps"] < 2**24, d
PYCHECK
run_rc "$REPRUN" exec -o "$T/a2" -q -- "$PY" noisy.py
[[ $RC == 1 ]] || fail "(a) text: exit $RC"
grep -qE 'relative error [0-9.e+-]+ \([0-9,]+ float32 ulp\)' "$T/out" || fail "(a) magnitude not in float32 ulp: $(grep -n 'loss:' "$T/out")"
grep -q 'same inputs' "$T/out" && fail "(a) a cause contradicts the op trace: $(cat "$T/out")"

cat >nostep.py <<'PY'
import os
import torch
torch.manual_seed(0)
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(os.environ["STEPS"])):
    loss = model(torch.ones(3, 4)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
PY
run_rc "$REPRUN" exec -o "$T/b" -q --vary env:STEPS=2,0 -- "$PY" nostep.py
[[ $RC == 1 ]] || fail "(b) exit $RC: $(head -c 2000 "$T/err")"
grep -qE '^ +framework.devices.cpu: null -> \(absent\) \(not recorded in B: it made no optimizer step\)' "$T/out" ||
  fail "(b) the device is not named as not recorded: $(cat "$T/out")"
grep -qE '^  \[gpu\]' "$T/out" && fail "(b) a device counted as a difference: $(cat "$T/out")"
grep -iE 'GPU or driver|framework.devices' "$T/out" | grep -qv 'not recorded' && fail "(b) offered as a cause: $(cat "$T/out")"
pass
