# A step-0 record with a loss or a batch is a training step, not the initial state (issue 13, item
# 4): the batch is compared first. A program whose loop counts from 0 and whose batch order follows
# Python's string hashing (PYTHONHASHSEED unpinned) parts at step 0 by data order; the built-in
# trainer's step 0 (weights only) is still the initial state.
source "$(dirname "$0")/lib.sh"
PY=$(python_with json) || skip "no python3"

# Hand-written bare logs.
t0='"tensors":{"0.weight":"w1"}'
printf '{"step":0,"loss":2,"batch":"b0",%s}\n{"step":1,"loss":1,"batch":"b1",%s}\n' "$t0" "$t0" >"$T/a.jsonl"
printf '{"step":0,"loss":2,"batch":"c0",%s}\n{"step":1,"loss":1,"batch":"b1",%s}\n' "$t0" "$t0" >"$T/order.jsonl"
printf '{"step":0,"loss":3,"batch":"b0",%s}\n{"step":1,"loss":1,"batch":"b1",%s}\n' "$t0" "$t0" >"$T/loss.jsonl"
printf '{"step":1,"loss":2,"batch":"b0",%s}\n{"step":2,"loss":1,"batch":"b1",%s}\n' "$t0" "$t0" >"$T/from1.jsonl"
printf '{"step":0,%s}\n{"step":1,"loss":2,"batch":"b0",%s}\n' "$t0" "$t0" >"$T/init.jsonl"
printf '{"step":0,"tensors":{"0.weight":"w2"}}\n{"step":1,"loss":2,"batch":"b0",%s}\n' "$t0" >"$T/init2.jsonl"
expect_rc 1 "$REPRUN" diff "$T/a.jsonl" "$T/order.jsonl"
grep -q '^DIFFERENT: runs part at step 0 (data order)' "$T/out" || fail "batch at step 0: $(head -1 "$T/out")"
grep -q 'the batch fingerprint differs (b0 vs c0)' "$T/out" || fail "batch at step 0: detail: $(cat "$T/out")"
expect_rc 1 "$REPRUN" diff "$T/a.jsonl" "$T/loss.jsonl"
grep -q '^DIFFERENT: runs part at step 0 (computation)' "$T/out" || fail "loss at step 0: $(head -1 "$T/out")"
grep -q "the logs' step 0 is a training step" "$T/out" || fail "loss at step 0: note: $(cat "$T/out")"
# A training step 0 on one side only is a real difference, not a one-sided initial state.
expect_rc 1 "$REPRUN" diff "$T/a.jsonl" "$T/from1.jsonl"
grep -q '^DIFFERENT: runs part at step 0 (steps differ)' "$T/out" || fail "0 vs 1: $(head -1 "$T/out")"
expect_rc 1 "$REPRUN" diff "$T/init.jsonl" "$T/a.jsonl"
grep -q 'step 0 is the initial state in A (no loss, no batch) but a training step in B' "$T/out" ||
  fail "initial state vs training step 0: $(cat "$T/out")"
# Weights only at step 0: the initial state, as before.
expect_rc 1 "$REPRUN" diff "$T/init.jsonl" "$T/init2.jsonl"
grep -q '^DIFFERENT: runs part at step 0 (initial state)' "$T/out" || fail "initial state: $(head -1 "$T/out")"
expect_rc 0 "$REPRUN" diff "$T/init.jsonl" "$T/init.jsonl"

# The issue's program: its loop counts from 0, the batch order is a set of strings' order.
cat >"$T/train.py" <<'PYEOF'
import json, os
order = list({f"sample-{i}" for i in range(16)})  # follows PYTHONHASHSEED
w = 1.0
with open(os.environ["REPRUN_STEP_LOG"], "w") as log:
    for step in range(4):
        batch = order[4 * step:4 * step + 4]
        loss = sum(len(s) * (i + 1) for i, s in enumerate(batch)) / (w * 100)
        w += loss / 10
        log.write(json.dumps({"step": step, "loss": loss, "batch": "|".join(batch), "tensors": {"w": repr(w)}}) + "\n")
PYEOF
unset PYTHONHASHSEED
expect_rc 1 "$REPRUN" exec -o "$T/unpinned" -q --no-pin --format json -- "$PY" "$T/train.py"
"$PY" - "$T/out" <<'PYEOF' || fail "unpinned, loop from 0: $(head -c 3000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
d = r["pairs"][0]["diff"]["divergence"]
assert d["step"] == 0 and d["classification"] == "data order", d
assert any("PYTHONHASHSEED" in n for n in r["pairs"][0]["diff"]["notes"])
PYEOF
expect_rc 0 "$REPRUN" exec -o "$T/pinned" -q -- "$PY" "$T/train.py"
pass
