# Stop a run hard (SIGKILL right after a step) and resume it in a fresh process, under another
# thread count: the finished record is bitwise identical to an uninterrupted run's. Also SIGINT:
# exit 130, status interrupted, and the resume finishes identical too.
source "$(dirname "$0")/lib.sh"
small_config "$T/c.json"
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/full" --threads 1 -q
for k in 7 10 23 34; do
  run_rc "$REPRUN" train "$T/c.json" -o "$T/k$k" --threads 2 -q --kill-after-step "$k"
  [[ $RC == 137 ]] || fail "expected SIGKILL (137) after step $k, got $RC"
  grep -q '"status": "running"' "$T/k$k/summary.json" || fail "killed run's summary should not say complete"
  expect_rc 0 "$REPRUN" train --resume "$T/k$k" --threads 1 -q
  cmp -s "$T/full/steps.jsonl" "$T/k$k/steps.jsonl" || fail "resumed run (killed after $k) differs"
  cmp -s "$T/full/evals.jsonl" "$T/k$k/evals.jsonl" || fail "resumed evals (killed after $k) differ"
  grep -q '"status": "complete"' "$T/k$k/summary.json" || fail "resumed run is not complete"
done
# Resuming a complete run changes nothing.
expect_rc 0 "$REPRUN" train --resume "$T/k7" -q
cmp -s "$T/full/steps.jsonl" "$T/k7/steps.jsonl" || fail "resuming a complete run changed it"
# ... and says so, with the run's own final metrics (not zeros).
expect_rc 0 "$REPRUN" train --resume "$T/k7"
grep -q 'already complete, nothing to train' "$T/err" || fail "resuming a complete run should say so: $(cat "$T/err")"
grep -q '^status: complete (already' "$T/out" || fail "status line: $(cat "$T/out")"
python3 - "$T/out" "$T/k7/summary.json" <<'PY' || fail "resuming a complete run printed other metrics: $(cat "$T/out")"
import json, sys
out = dict(l.split(": ", 1) for l in open(sys.argv[1]).read().splitlines())
s = json.load(open(sys.argv[2]))
assert float(out["train_loss"]) == s["train_loss"] != 0, (out["train_loss"], s["train_loss"])
assert abs(float(out["val_accuracy"]) - s["val_accuracy"]) < 1e-4, out
assert float(out["steps_per_second"].split()[0]) > 0, out
PY
# Resuming with a different config is refused.
expect_error 'differs from the configuration of the run being resumed' \
  "$REPRUN" train "$T/c.json" --resume "$T/k7" --set optimizer.lr=0.5
# A corrupt latest checkpoint is skipped in favour of the one before.
run_rc "$REPRUN" train "$T/c.json" -o "$T/corrupt" -q --kill-after-step 25
latest=$(ls "$T/corrupt/checkpoints"/*.ckpt | sort | tail -n 1)
size=$(stat -c %s "$latest")
printf 'garbage' | dd of="$latest" bs=1 seek=$((size - 20)) conv=notrunc status=none
expect_rc 0 "$REPRUN" train --resume "$T/corrupt"
grep -q 'skipping checkpoint: .*payload SHA-256 does not match' "$T/err" || fail "corrupt checkpoint not reported: $(cat "$T/err")"
cmp -s "$T/full/steps.jsonl" "$T/corrupt/steps.jsonl" || fail "resume past a corrupt checkpoint differs"

# SIGINT: finish the step, checkpoint, status interrupted, exit 130.
cp "$T/c.json" "$T/long.json" && json_edit "$T/long.json" training.epochs=400
expect_rc 0 "$REPRUN" train "$T/long.json" -o "$T/long_full" -q --set training.steps=3000 --set training.epochs=null
"$REPRUN" train "$T/long.json" -o "$T/int" -q --set training.steps=3000 --set training.epochs=null &
pid=$!
for _ in $(seq 100); do
  [[ -s "$T/int/steps.jsonl" ]] && break
  sleep 0.05
done
kill -INT "$pid"
wait "$pid"
rc=$?
[[ $rc == 130 ]] || fail "SIGINT: expected exit 130, got $rc"
grep -q '"status": "interrupted"' "$T/int/summary.json" || fail "SIGINT: status is not interrupted"
tail -n 1 "$T/int/steps.jsonl" >"$T/last_step.json"
n=$(json_get "$T/last_step.json" step)
[[ -f "$T/int/checkpoints/step-$(printf %09d "$n").ckpt" ]] || fail "SIGINT: no checkpoint at the last step $n"
expect_rc 0 "$REPRUN" train --resume "$T/int" -q
cmp -s "$T/long_full/steps.jsonl" "$T/int/steps.jsonl" || fail "resume after SIGINT differs"
# Forks: from the newest checkpoint (no --from-step) and from an earlier one, with the full trace;
# the source stays as it was, and the fork's steps are the source's.
cp "$T/full/steps.jsonl" "$T/full_steps_before"
expect_rc 0 "$REPRUN" train --resume "$T/full" -o "$T/fork_newest" -q
newest=$(json_get "$T/fork_newest/manifest.json" forked_from.step)
last=$(json_get "$T/full/summary.json" steps)
[[ $newest == "$last" ]] || fail "fork without --from-step started at $newest, not the newest checkpoint $last"
cmp -s "$T/full/steps.jsonl" "$T/fork_newest/steps.jsonl" || fail "fork from the newest checkpoint differs"
from=$(basename "$(ls "$T/full/checkpoints" | sort | head -n 1)" .ckpt)
from=$((10#${from#step-}))
expect_rc 0 "$REPRUN" train --resume "$T/full" -o "$T/fork_trace" --from-step "$from" --set determinism.trace=full -q
[[ $(json_get "$T/fork_trace/manifest.json" forked_from.step) == "$from" ]] || fail "fork did not start at $from"
expect_rc 0 "$REPRUN" diff "$T/full" "$T/fork_trace"
cmp -s "$T/full/steps.jsonl" "$T/full_steps_before" || fail "forking changed the source's log"
expect_error 'has no checkpoint at step 3 \(it keeps steps' "$REPRUN" train --resume "$T/full" -o "$T/fork_bad" --from-step 3
[[ ! -e $T/fork_bad ]] || fail "a refused fork left a directory behind"
expect_error "a resumed run may change execution settings only" "$REPRUN" train --resume "$T/full" --set optimizer.lr=0.5
# Killed after its last checkpoint, before its final summary (here: the killed run given the full
# run's logs and last checkpoint): the resume has nothing left to train and ends with the run's own
# metrics, not empty ones.
last=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['steps'])" "$T/full/summary.json")
run_rc "$REPRUN" train "$T/c.json" -o "$T/late" -q --kill-after-step "$last"
[[ $RC == 137 ]] || fail "expected SIGKILL after the last step, got $RC"
cp "$T/full/steps.jsonl" "$T/full/evals.jsonl" "$T/late/"
cp "$T/full/checkpoints/$(printf 'step-%09d.ckpt' "$last")" "$T/late/checkpoints/"
expect_rc 0 "$REPRUN" train --resume "$T/late" -q
python3 - "$T/full/summary.json" "$T/late/summary.json" <<'PY' || fail "a resume with nothing to train lost the metrics"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for k in ("status", "steps", "train_loss", "val_loss", "val_accuracy"):
    assert a[k] == b[k], (k, a[k], b[k])
PY
pass
