# Evaluation does not depend on its batch size: `check --vary eval_batch_size=1,7,256` passes, and
# the three runs' evaluation logs (loss bits and accuracy) are byte-identical.
source "$(dirname "$0")/lib.sh"
small_config "$T/c.json"
json_edit "$T/c.json" data.samples=1000 data.validation_fraction+=0.3
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/w" --vary eval_batch_size=1,7,256 --format json
for i in 1 2 3; do
  [[ -s "$T/w/run-$i/evals.jsonl" ]] || fail "run-$i has no evaluations"
done
[[ $(json_get "$T/w/run-2/manifest.json" config.training.eval_batch_size) == 7 ]] || fail "run-2 not evaluated 7 rows at a time"
cmp -s "$T/w/run-1/evals.jsonl" "$T/w/run-2/evals.jsonl" || fail "evals differ between eval_batch_size 1 and 7"
cmp -s "$T/w/run-1/evals.jsonl" "$T/w/run-3/evals.jsonl" || fail "evals differ between eval_batch_size 1 and 256"
cmp -s "$T/w/run-1/steps.jsonl" "$T/w/run-3/steps.jsonl" || fail "steps differ"
# The key may change on resume (an execution setting), and a bad value is refused.
run_rc "$REPRUN" train "$T/c.json" -o "$T/k" -q --kill-after-step 30
[[ $RC == 137 ]] || fail "expected SIGKILL (137), got $RC"
expect_rc 0 "$REPRUN" train --resume "$T/k" -q --set training.eval_batch_size=3
cmp -s "$T/w/run-1/evals.jsonl" "$T/k/evals.jsonl" || fail "evals differ after a resume with eval_batch_size 3"
expect_error "--vary eval_batch_size=0: '0' is not a positive integer" "$REPRUN" check "$T/c.json" --vary eval_batch_size=0
expect_error "unknown dimension 'eval_batchsize'.*did you mean 'eval_batch_size'" "$REPRUN" check "$T/c.json" --vary eval_batchsize=1,2
pass
