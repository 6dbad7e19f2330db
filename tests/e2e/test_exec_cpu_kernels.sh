# The CPU's kernels of a PyTorch run (issue 37): the manifest's framework.cpu names the instruction
# set torch dispatches to and every OpenBLAS loaded with the core it chose; two runs recorded apart
# with different OPENBLAS_CORETYPE values, on a script whose bits do not depend on the BLAS (no
# matmul), diff IDENTICAL with the kernel facts and the variable listed as machine facts, not
# counted; and where torch's matmul runs on OpenBLAS (Debian's torch), exec --vary of two core types
# that give other bits names the op, its line and the kernels, with a fix that acts on them, as does
# reprun diff of two runs recorded apart with --trace-steps 1. The same for ATEN_CPU_CAPABILITY
# (torch's own kernels). The core types are ones this CPU has (forcing one it lacks can end in SIGILL).
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch"
flags=$(grep -m1 '^flags' /proc/cpuinfo)
if [[ $flags == *" avx2 "* ]]; then
  cores=(Haswell Sandybridge)
elif [[ $flags == *" avx "* ]]; then
  cores=(Sandybridge Nehalem)
else
  skip "this CPU has no AVX: no two OpenBLAS core types to choose between"
fi
cat >elementwise.py <<'PY'
import numpy  # loads the OpenBLAS numpy uses, as most training scripts do
import torch
torch.manual_seed(0)
x = torch.randn(256)
y = 3 * x + 1
w = torch.zeros(256, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
opt = torch.optim.SGD([w, b], lr=0.1)
for step in range(4):
    opt.zero_grad()
    loss = ((w * x + b - y) ** 2).mean()  # element-wise only: no BLAS call
    loss.backward()
    opt.step()
PY
for i in 0 1; do
  OPENBLAS_CORETYPE=${cores[$i]} expect_rc 0 "$REPRUN" exec -o "$T/r$i" --runs 1 -q -- "$PY" elementwise.py
done
python3 - "$T/r0/run-1/manifest.json" "$T/r1/run-1/manifest.json" "${cores[@]}" <<'PYEOF' || fail "framework.cpu: $(grep -A30 '"cpu"' "$T/r0/run-1/manifest.json" | head -40)"
import json, sys
for path, core in zip(sys.argv[1:3], sys.argv[3:5]):
    cpu = json.load(open(path))["framework"]["cpu"]
    assert cpu["capability"], cpu
    assert cpu["openblas"] and all(b["core"] == core and b["version"] for b in cpu["openblas"].values()), (core, cpu)
PYEOF
expect_rc 0 "$REPRUN" diff "$T/r0/run-1" "$T/r1/run-1" --format json
python3 - "$T/out" <<'PYEOF' || fail "diff of two OPENBLAS_CORETYPE values, equal numbers: $(head -c 3000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["identical"] is True, r["verdict"]
meta = {m["key"]: m for m in r["metadata"]}
env = meta["env.OPENBLAS_CORETYPE"]
assert env["kind"] == "informational" and env["category"] == "cpu" and env["why"] == "a machine fact: the numbers agree", env
cores = [m for k, m in meta.items() if k.startswith("framework.cpu.openblas.") and k.endswith(".core")]
assert cores and all(m["kind"] == "informational" and m["category"] == "cpu" for m in cores), meta.keys()
assert not [m for m in r["metadata"] if m["kind"] == "material"], r["metadata"]
assert any("different machines or CPU kernels" in n for n in r["notes"]), r["notes"]
PYEOF
expect_rc 0 "$REPRUN" diff "$T/r0/run-1" "$T/r1/run-1"
grep -q '^IDENTICAL' "$T/out" || fail "text verdict: $(head -3 "$T/out")"

# torch's own kernels: ATEN_CPU_CAPABILITY=default (no vector instructions) against avx2, where this
# CPU and torch have AVX2 and the two give other bits (the samplers and the init do here).
cat >init.py <<'PY'
import torch
torch.manual_seed(0)
model = torch.nn.Linear(512, 1024)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 512)
for step in range(2):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
PY
capability() {
  ATEN_CPU_CAPABILITY=$1 "$PY" -c "import hashlib, torch; torch.manual_seed(0); m = torch.nn.Linear(512, 1024)
print(hashlib.sha256(m.weight.detach().numpy().tobytes()).hexdigest())"
}
if [[ $flags != *" avx2 "* ]]; then
  echo "note: this CPU has no AVX2: the ATEN_CPU_CAPABILITY case is not run"
elif [[ $(capability default) == "$(capability avx2)" ]]; then
  echo "note: torch's kernels give the same bits with and without AVX2 here: the ATEN_CPU_CAPABILITY case is not run"
else
  expect_rc 1 "$REPRUN" exec -o "$T/cap" -q --vary env:ATEN_CPU_CAPABILITY=default,avx2 --format json -- "$PY" init.py
  python3 - "$T/out" <<'PYEOF' || fail "--vary ATEN_CPU_CAPABILITY: $(head -c 4000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
p = r["pairs"][0]
s = p["localization"]["sentence"]
assert "init.py:3" in s or "init.py:6" in s, s
assert "The results depend on ATEN_CPU_CAPABILITY: it gives other bits with avx2 than with default (each run's replay at its own value gave its records again)" in s, s
assert "ATEN_CPU_CAPABILITY is default in A and avx2 in B" in s and "torch's own kernels use" in s, s
assert "ATEN_CPU_CAPABILITY (PyTorch's own kernels) set for every run" in s, s
causes = p["diff"]["diagnosis"]
assert causes[0]["cause"].startswith("aten.") and "depend on ATEN_CPU_CAPABILITY" in causes[0]["cause"], causes
text = s + " ".join(d["cause"] for d in causes)
for bad in ("generator's state differs", "seeded differently", "same environment", "same inputs and environment"):
    assert bad not in text, (bad, text)
PYEOF
  # The same two settings as two runs recorded apart, each keeping the op trace of its first step
  # (as on two machines): reprun diff names the op from the traces.
  ATEN_CPU_CAPABILITY=default expect_rc 0 "$REPRUN" exec -o "$T/capA" --runs 1 --trace-steps 1 -q -- "$PY" init.py
  ATEN_CPU_CAPABILITY=avx2 expect_rc 0 "$REPRUN" exec -o "$T/capB" --runs 1 --trace-steps 1 -q -- "$PY" init.py
  [[ -s $T/capA/run-1/ops.jsonl ]] || fail "--trace-steps 1 kept no ops.jsonl: $(ls "$T/capA/run-1")"
  expect_rc 1 "$REPRUN" diff "$T/capA/run-1" "$T/capB/run-1" --format json
  python3 - "$T/out" "$T/capA/run-1" <<'PYEOF' || fail "diff of two recorded ATEN_CPU_CAPABILITY runs: $(head -c 4000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
summary = json.load(open(sys.argv[2] + "/summary.json"))
assert summary["op_trace_log"]["records"] > 0 and summary["steps"] == 2, summary  # traced step 1, ran on to step 2
s = r["localization"]["sentence"]
assert "init.py:3" in s or "init.py:6" in s, s
assert "ATEN_CPU_CAPABILITY is default in A and avx2 in B" in s and "torch's own kernels use" in s, s
assert "ATEN_CPU_CAPABILITY (PyTorch's own kernels) set for every run" in s, s
assert r["diagnosis"][0]["cause"].startswith("aten."), r["diagnosis"]
text = s + " ".join(d["cause"] for d in r["diagnosis"])
for bad in ("generator's state differs", "seeded differently", "same environment", "same inputs and environment"):
    assert bad not in text, (bad, text)
PYEOF
  expect_rc 1 "$REPRUN" diff "$T/capA/run-1" "$T/capB/run-1"
  grep -q "found in the op traces the runs kept" "$T/out" || fail "text: $(cat "$T/out")"
  # A trace edited after the run: the diff refuses it, naming the file.
  sed -i '2s/"i":1,/"i":1, /' "$T/capB/run-1/ops.jsonl"
  expect_rc 2 "$REPRUN" diff "$T/capA/run-1" "$T/capB/run-1"
  grep -q "capB/run-1/ops.jsonl: damaged" "$T/err" || fail "damaged trace: $(cat "$T/err")"
fi

# Runs recorded apart that part after the steps their traces hold: the diff says so and how many
# steps to trace, never "control flow".
cat >late.py <<'PY'
import os
import torch
torch.manual_seed(0)
model = torch.nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 16)
for step in range(3):
    if step == 1 and os.environ.get("LATE_LR"):
        opt.param_groups[0]["lr"] = float(os.environ["LATE_LR"])
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
PY
expect_rc 0 "$REPRUN" exec -o "$T/lateA" --runs 1 --trace-steps 1 -q -- "$PY" late.py
LATE_LR=0.2 expect_rc 0 "$REPRUN" exec -o "$T/lateB" --runs 1 --trace-steps 2 -q -- "$PY" late.py
expect_rc 1 "$REPRUN" diff "$T/lateA/run-1" "$T/lateB/run-1"
grep -q "op-level localization: the op traces agree as far as both go, [0-9]* ops; A's ends after step 1, before the step where the runs part (2); record both with --trace-steps 2" "$T/out" ||
  fail "traces that end early: $(cat "$T/out")"
! grep -q "control flow" "$T/out" || fail "control flow claimed: $(cat "$T/out")"
expect_rc 0 "$REPRUN" exec -o "$T/lateC" --runs 1 -q -- "$PY" late.py
expect_rc 1 "$REPRUN" diff "$T/lateC/run-1" "$T/lateB/run-1"
grep -q "op-level localization: A kept no op trace: record both with reprun exec --runs 1 --trace-steps 2" "$T/out" ||
  fail "no trace: $(cat "$T/out")"

# A variable varied on a program that differs at any value (unseeded): the replay at one value does
# not give its run again, so the variable is not named as the cause; the seed is.
sed 's/^torch.manual_seed(0)$//' init.py >unseeded.py
expect_rc 1 "$REPRUN" exec -o "$T/unseeded" -q --vary env:UNUSED_SETTING=a,b --format json -- "$PY" unseeded.py
python3 - "$T/out" <<'PYEOF' || fail "--vary on an unseeded program: $(head -c 4000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
p = r["pairs"][0]
s = p["localization"]["sentence"]
assert "seeded differently in the two runs" in s, s
assert "the runs also differ at one value" in s, s
assert "depend on UNUSED_SETTING" not in s, s
assert not [d for d in p["diff"]["diagnosis"] if "varied on purpose changes the numbers" in d["cause"]], p["diff"]["diagnosis"]
PYEOF

# Two core types whose matmul gives other bits here, found now (none where torch's BLAS is not
# OpenBLAS: PyPI's torch runs its matmul on MKL).
probe() {
  OPENBLAS_CORETYPE=$1 "$PY" -c "import hashlib, torch; torch.manual_seed(0); a = torch.randn(64, 512); w = torch.randn(1024, 512)
print(hashlib.sha256(torch.nn.functional.linear(a, w).numpy().tobytes()).hexdigest())"
}
pair=()
first=$(probe "${cores[0]}")
for other in "${cores[@]:1}" Nehalem; do
  [[ $other == Nehalem || $flags == *" avx "* ]] || continue
  if [[ $(probe "$other") != "$first" ]]; then
    pair=("${cores[0]}" "$other")
    break
  fi
done
if ((${#pair[@]} == 0)); then
  echo "note: no two OpenBLAS core types give torch's matmul other bits here (its BLAS: $("$PY" -c 'import torch, re; print(re.search(r"BLAS_INFO=([^,]+)", torch.__config__.show()).group(1))')): the --vary case is not run"
  pass
fi
cat >wide.py <<'PY'
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 512)
y = torch.randint(0, 10, (64,))
for step in range(2):
    opt.zero_grad()
    out = model(x)
    loss = torch.nn.functional.cross_entropy(out, y)
    loss.backward()
    opt.step()
PY
expect_rc 1 "$REPRUN" exec -o "$T/v" -q --vary "env:OPENBLAS_CORETYPE=${pair[0]},${pair[1]}" --format json -- "$PY" wide.py
python3 - "$T/out" "${pair[@]}" <<'PYEOF' || fail "--vary OPENBLAS_CORETYPE: $(head -c 4000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
a, b = sys.argv[2:4]
s = r["pairs"][0]["localization"]["sentence"]
assert s.startswith("step 1, forward, wide.py:9, module 0 (Linear): aten.addmm") or "aten.mm" in s or "aten.addmm" in s, s
assert f"depends on the CPU's kernels, which differ: OPENBLAS_CORETYPE is {a} in A and {b} in B" in s, s
assert "OPENBLAS_CORETYPE (OpenBLAS) and ATEN_CPU_CAPABILITY" in s, s
causes = " ".join(d["cause"] for d in r["pairs"][0]["diff"]["diagnosis"])
for bad in ("generator's state", "same environment", "same inputs and environment"):
    assert bad not in s and bad not in causes, (bad, s, causes)
PYEOF
# The two core types as two runs recorded apart (two machines): diff names the op from their traces.
for i in 0 1; do
  OPENBLAS_CORETYPE=${pair[$i]} expect_rc 0 "$REPRUN" exec -o "$T/blas$i" --runs 1 --trace-steps 1 -q -- "$PY" wide.py
done
expect_rc 1 "$REPRUN" diff "$T/blas0/run-1" "$T/blas1/run-1" --format json
python3 - "$T/out" "${pair[@]}" <<'PYEOF' || fail "diff of two recorded OPENBLAS_CORETYPE runs: $(head -c 4000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
a, b = sys.argv[2:4]
s = r["localization"]["sentence"]
assert "wide.py:9" in s and ("aten.addmm" in s or "aten.mm" in s), s
assert f"depends on the CPU's kernels, which differ: OPENBLAS_CORETYPE is {a} in A and {b} in B" in s, s
assert "OPENBLAS_CORETYPE (OpenBLAS) and ATEN_CPU_CAPABILITY" in s, s
text = s + " ".join(d["cause"] for d in r["diagnosis"])
for bad in ("generator's state", "same environment", "same inputs and environment"):
    assert bad not in text, (bad, text)
PYEOF
pass
