# Trace level is not counted (issue 12, item 3): runs that differ only in determinism.trace are
# compared on what both recorded, and the report says what could not be compared. A real
# difference is still found across trace levels.
source "$(dirname "$0")/lib.sh"
small_config "$T/c.json"
for level in loss weights full; do
  expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/$level" -q --set determinism.trace=$level
done
# loss vs weights, both ways: IDENTICAL, with the one-sided records named.
for pair in "loss weights" "weights loss" "loss full" "full weights"; do
  set -- $pair
  expect_rc 0 "$REPRUN" diff "$T/$1" "$T/$2"
  grep -q '^IDENTICAL: .* in what both recorded' "$T/out" || fail "$1 vs $2: $(head -3 "$T/out")"
  grep -q 'not counted' "$T/out" || fail "$1 vs $2: the trace setting should be listed as not counted: $(cat "$T/out")"
done
expect_rc 0 "$REPRUN" diff "$T/loss" "$T/weights"
grep -q 'not compared: the step-0 record (initial weights) is in B only' "$T/out" || fail "step-0 note: $(cat "$T/out")"
grep -q 'not compared: B recorded tensor checksums and norms, A did not' "$T/out" || fail "tensor note: $(cat "$T/out")"
expect_rc 0 "$REPRUN" diff "$T/weights" "$T/full"
grep -q 'not compared: B recorded forward and backward trace entries' "$T/out" || fail "trace note: $(cat "$T/out")"
# Bare logs too.
expect_rc 0 "$REPRUN" diff "$T/loss/steps.jsonl" "$T/full/steps.jsonl"
# The same trace level compares everything: no note.
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/weights2" -q --set determinism.trace=weights
expect_rc 0 "$REPRUN" diff "$T/weights" "$T/weights2"
! grep -q 'not compared' "$T/out" || fail "same trace level: nothing is one-sided: $(cat "$T/out")"
# Another learning rate at another trace level is still DIFFERENT: at step 2, the first loss computed
# after an update (trace loss records no weights to tell it at step 1).
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/lr" -q --set determinism.trace=loss --set optimizer.lr=0.07
expect_rc 1 "$REPRUN" diff "$T/weights" "$T/lr"
grep -q '^DIFFERENT: runs part at step 2 (computation)' "$T/out" || fail "lr change across trace levels: $(head -3 "$T/out")"
# A log that really ends early is still a divergence, counted without the one-sided step 0.
head -n 20 "$T/loss/steps.jsonl" >"$T/short.jsonl"
expect_rc 1 "$REPRUN" diff "$T/weights/steps.jsonl" "$T/short.jsonl"
grep -q 'B stops after 20 records' "$T/out" || fail "ended early across trace levels: $(head -3 "$T/out")"
pass
