# The automatic step log of reprun_capture (python/reprun_capture/capture.py) keeps its parameter
# lists, names and addresses between steps and formats its lines itself: this script changes all of
# that under it (a parameter's .data assigned, a parameter swapped in its group, a group added, two
# optimizers in turn, two models with the same names in one optimizer, names that JSON escapes, a
# step without a loss, a NaN loss) and checks every line byte for byte against json.dumps of the
# record with Fingerprinter.many's checksums, as the capture wrote them before it kept anything.
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch (apt-get install python3-torch)"
PKG="$(dirname "$REPRUN")/python"

cat >steps.py <<'PYEOF'
import json, math, sys
import torch
from reprun_capture.fingerprint import Fingerprinter

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
model.add_module('odd "name" %s \\ é', torch.nn.Linear(2, 2))
m1, m2 = torch.nn.Sequential(torch.nn.Linear(4, 2)), torch.nn.Sequential(torch.nn.Linear(4, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
opt_pair = torch.optim.Adam(list(m1.parameters()) + list(m2.parameters()), lr=0.01)
names = {}
for root in (model, m1, m2):
    for n, p in root.named_parameters():
        names.setdefault(id(p), n)
fp = Fingerprinter(torch)
x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
expected = open(sys.argv[1], "w")
step = 0


def expect(o, loss):
    global step
    step += 1
    params, pos = [], []
    for g, group in enumerate(o.param_groups):
        for i, p in enumerate(group["params"]):
            if isinstance(p, torch.Tensor):
                params.append(p)
                pos.append((g, i))
    rec = {"step": step}
    if loss is not None:
        v = float(loss)
        rec["loss"] = "NaN" if math.isnan(v) else v
    if params:
        rec["tensors"] = {names.get(id(p)) or f"param_groups.{g}.{i}": {"checksum": f}
                          for p, (g, i), f in zip(params, pos, fp.many(params))}
    expected.write(json.dumps(rec, separators=(",", ":")) + "\n")


def train(o=opt, nan=False):
    o.zero_grad()
    if o is opt:
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out[:, :2] + model[3](out), y)
    else:
        loss = (m1(x) - m2(x)).pow(2).mean()
    if nan:
        loss = loss * float("nan")
    loss.backward()
    o.step()
    expect(o, loss.item())


train(); train()
model[0].weight.data = model[0].weight.data.clone() * 0.5   # a new address
train()
model[2].weight.data.t_()                                     # same address, other strides
train()
extra = torch.nn.Parameter(torch.randn(8, 4))
opt.param_groups[0]["params"][0] = extra                      # swapped in place in its group
train()
opt.add_param_group({"params": [torch.nn.Parameter(torch.randn(3))]})
train()
train(opt_pair); train(); train(opt_pair)                     # two optimizers in turn
for p in model.parameters():                                  # a step without backward: no loss
    p.grad = torch.ones_like(p)
opt.step()
expect(opt, None)
train(nan=True)
expected.close()
PYEOF
PYTHONPATH="$PKG" REPRUN_CAPTURE=1 REPRUN_AUTO_STEP_LOG="$T/steps.jsonl" REPRUN_FRAMEWORK_FILE="$T/framework.json" \
  "$PY" steps.py "$T/expected.jsonl" >"$T/out" 2>"$T/err" || fail "the script failed: $(tail -5 "$T/err")"
[[ ! -s $T/err ]] || fail "the capture said something: $(head -5 "$T/err")"
[[ $(wc -l <"$T/expected.jsonl") == 11 ]] || fail "the script expected $(wc -l <"$T/expected.jsonl") steps, not 11"
cmp "$T/expected.jsonl" "$T/steps.jsonl" >/dev/null ||
  fail "the step log differs from json.dumps of the records: $(diff "$T/expected.jsonl" "$T/steps.jsonl" | head -6)"
grep -q '"odd \\"name\\" %s \\\\ \\u00e9.weight"' "$T/steps.jsonl" || fail "the escaped name is not in the log"
grep -q '"param_groups.1.0"' "$T/steps.jsonl" || fail "no unnamed parameter in the log"
grep -q '"loss":"NaN"' "$T/steps.jsonl" || fail "no NaN loss in the log"
# TF32 on torch 2.7 and later: where fp32_precision is "tf32" or "ieee" it answers, and the legacy
# allow_tf32 flag, whose reading then warns or raises ("mix of legacy and new APIs"), is not read;
# nothing is raised or warned into the program. Torch 1.13 has no fp32_precision: the flag answers.
PYTHONPATH="$PKG" "$PY" - >"$T/tf32" 2>&1 <<'PY' || fail "TF32 facts: $(cat "$T/tf32")"
import types, warnings
import torch
from reprun_capture import capture
class Legacy:
    @property
    def allow_tf32(self):
        warnings.warn("Please use the new API settings to control TF32 behavior")
        raise RuntimeError("you have used mix of legacy and new APIs to set the TF32 status")
fake = types.SimpleNamespace(backends=types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=Legacy())))
with warnings.catch_warnings():
    warnings.simplefilter("error")
    for precision, want in (("ieee", False), ("tf32", True), ("none", None)):
        Legacy.fp32_precision = precision
        got = capture._allow_tf32(fake, "cuda.matmul", "cuda.matmul")
        assert got is want, (precision, got)
    assert capture._allow_tf32(torch, "cuda.matmul", "cuda.matmul") is bool(torch.backends.cuda.matmul.allow_tf32)
PY

pass
