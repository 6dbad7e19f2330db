# reprun exec on the NumPy example: with the pins two runs are identical; the variant whose data
# order comes from iterating a set of strings differs from the first step (data order) without the
# pins, and is identical with them.
source "$(dirname "$0")/lib.sh"
PY=$(python_with numpy) || skip "no python3 with numpy (apt-get install python3-numpy)"
unset PYTHONHASHSEED
EXAMPLE="$REPRUN_SRC/examples/python/train_numpy.py"
expect_rc 0 "$REPRUN" exec -o "$T/pinned" -q -- "$PY" "$EXAMPLE"
grep -q '^PASS: 2 runs of the program identical' "$T/out" || fail "pinned: $(head -1 "$T/out")"
m="$T/pinned/run-1/manifest.json"
grep -q '"PYTHONHASHSEED": {' "$m" || fail "pins not recorded"
grep -q '"source": "pinned"' "$m" || fail "pin source not recorded"
grep -q '"kind": "exec"' "$m" || fail "kind"
grep -q '"version": "Python 3' "$m" || fail "interpreter version not recorded"
grep -q '"step_log": "program"' "$m" || fail "step log source"
python3 - "$m" "$EXAMPLE" <<'PYEOF' || fail "argv file digest missing"
import hashlib, json, sys
m = json.load(open(sys.argv[1]))
want = hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
assert any(f["sha256"] == want and f["index"] == 1 for f in m["program"]["argv_files"]), m["program"]
assert m["env"]["PYTHONHASHSEED"] == "0"
# A program that never imports torch: its interpreter's installed distributions, as a PyTorch program's.
f = m["framework"]
assert f["name"] == "python" and f["python"].count(".") == 2, f
d = f["distributions"]
assert d["count"] == len(d["packages"]) > 0 and len(d["sha256"]) == 64 and "numpy" in {k.lower() for k in d["packages"]}, d
assert "torch" not in f and "determinism" not in f, f
PYEOF
[[ $(wc -l <"$T/pinned/run-1/steps.jsonl") == 48 ]] || fail "expected 48 step records"
[[ -s "$T/pinned/run-1/stdout.txt" ]] || fail "stdout not saved"

expect_rc 1 "$REPRUN" exec -o "$T/unpinned" -q --no-pin --format json -- "$PY" "$EXAMPLE" --order-from-set
python3 - "$T/out" <<'PYEOF' || fail "unpinned set order: $(head -c 3000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
d = r["pairs"][0]["diff"]["divergence"]
assert r["kind"] == "exec" and r["identical"] is False
assert d["step"] == 1 and d["classification"] == "data order", d
assert any("PYTHONHASHSEED" in n for n in r["pairs"][0]["diff"]["notes"])
PYEOF
expect_rc 0 "$REPRUN" exec -o "$T/setpinned" -q -- "$PY" "$EXAMPLE" --order-from-set
# A value the user already set is kept and reported.
PYTHONHASHSEED=5 expect_rc 0 "$REPRUN" exec -o "$T/kept" -q -- "$PY" "$EXAMPLE" --epochs 1
grep -q '"source": "kept (already set)"' "$T/kept/run-1/manifest.json" || fail "user's value not reported as kept"
# --vary env: run i gets value i, and the varied variable is not counted.
expect_rc 1 "$REPRUN" exec -o "$T/vary" -q --vary env:REPRUN_SEED=1,2 -- "$PY" "$EXAMPLE" --epochs 1
grep -q 'runs part at step 1 (data order)' "$T/out" || fail "vary seed: $(head -3 "$T/out")"
grep -q 'pins.REPRUN_SEED.value: "1" -> "2" (varied on purpose)' "$T/out" || fail "varied pin not shown as varied"
pass
