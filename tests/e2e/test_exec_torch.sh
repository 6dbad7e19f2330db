# reprun exec on the PyTorch example (Debian's python3-torch): identical with the pins. Skipped
# visibly when PyTorch is not installed (.ci/run installs it).
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch (apt-get install python3-torch)"
expect_rc 0 "$REPRUN" exec -o "$T/t" -q -- "$PY" "$REPRUN_SRC/examples/python/train_torch.py"
grep -q '^PASS: 2 runs of the program identical' "$T/out" || fail "torch: $(head -1 "$T/out")"
grep -q '"0.weight": {"sha256"' "$T/t/run-1/steps.jsonl" 2>/dev/null ||
  grep -q '"0.weight":{"sha256"' "$T/t/run-1/steps.jsonl" || fail "parameters not logged"
pass
