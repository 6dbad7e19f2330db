# Bitwise identity of steps.jsonl across thread counts 1, 2, 3, 8, accumulation splits 1, 2, 4
# (same batch size), and two fresh processes; with dropout, so the dropout stream is covered too.
source "$(dirname "$0")/lib.sh"
small_config "$T/c.json" '"determinism": {"trace": "full"}'
json_edit "$T/c.json" model.dropout+=0.2
for t in 1 2 3 8; do
  expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/t$t" --threads "$t" -q
done
for a in 1 2 4; do
  expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/a$a" --threads 2 -q --set training.accumulation=$a
done
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/again" --threads 2 -q
[[ $(wc -l <"$T/t1/steps.jsonl") == 35 ]] || fail "expected 35 lines (step 0 and 34 steps), got $(wc -l <"$T/t1/steps.jsonl")"
grep -q '"backward":\[' "$T/t1/steps.jsonl" || fail "trace full wrote no backward entries"
for d in t2 t3 t8 a1 a2 a4 again; do
  cmp -s "$T/t1/steps.jsonl" "$T/$d/steps.jsonl" || fail "steps.jsonl of $d differs from threads=1"
  cmp -s "$T/t1/evals.jsonl" "$T/$d/evals.jsonl" || fail "evals.jsonl of $d differs from threads=1"
done
# A different seed must give different bits (the comparison above can fail).
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/seed6" -q --set seed=6
cmp -s "$T/t1/steps.jsonl" "$T/seed6/steps.jsonl" && fail "a different seed gave identical steps"
pass
