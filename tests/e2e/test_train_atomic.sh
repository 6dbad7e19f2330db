# reduction "atomic" sums gradient partials in completion order, with chunks issued in an order
# drawn per process: two runs differ, with 2 or 4 threads, on an idle or a loaded machine.
source "$(dirname "$0")/lib.sh"
small_config "$T/c.json" '"determinism": {"reduction": "atomic"}'
json_edit "$T/c.json" 'model.hidden=[128,128]' training.batch_size=128 training.epochs=12 data.samples=700
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/r1" --threads 4 -q
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/r2" --threads 4 -q
cmp -s "$T/r1/steps.jsonl" "$T/r2/steps.jsonl" && fail "two atomic runs with 4 threads were identical"
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/s1" --threads 2 -q
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/s2" --threads 2 -q
cmp -s "$T/s1/steps.jsonl" "$T/s2/steps.jsonl" && fail "two atomic runs with 2 threads were identical"
# They part within the first few steps.
expect_rc 1 "$REPRUN" diff "$T/s1" "$T/s2"
step=$(grep -oE -m 1 '^DIFFERENT: runs part at step [0-9]+' "$T/out")
step=${step##* }
[[ -n $step && $step -le 5 ]] || fail "atomic runs should part within 5 steps: $(head -1 "$T/out")"
# Ordered reduction with the same settings stays identical.
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/o1" --threads 4 -q --set determinism.reduction=ordered
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/o2" --threads 2 -q --set determinism.reduction=ordered
cmp -s "$T/o1/steps.jsonl" "$T/o2/steps.jsonl" || fail "ordered runs differ"
pass
