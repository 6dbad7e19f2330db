# check --vary resume=N resumes from a real checkpoint, and says which (issue 41, item 1). The kill
# lands once the checkpoint at or before step N is on disk (before, a kill at step 50 with
# checkpoint_every 50 came before step 50's checkpoint, and the "resumed" run started over from
# step 0 while check printed PASS); every report format says "resumed from step K"; no checkpoint
# by step N is exit 2 naming the first one; a resume that drops its optimizer state fails (exit 1),
# and so does one that skips the checkpoint the killed run left.
source "$(dirname "$0")/lib.sh"
small_config "$T/c.json" # 34 steps, a checkpoint every 10

# N on a checkpoint step: resumed from N itself (the kill waited for step N's checkpoint).
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/at" --vary resume=20 -q --format json \
  --junit "$T/at.xml" --markdown "$T/at.md" --html "$T/at.html"
python3 - "$T/out" "$T/at/run-2/manifest.json" <<'PY' || fail "resume=20: $(head -c 3000 "$T/out")"
import json, sys
r, m = (json.load(open(p)) for p in sys.argv[1:])
assert r["identical"] is True, r["verdict"]
run2 = r["runs"][1]
assert run2["variation"] == "killed after step 20 and resumed from step 20", run2
assert run2["resumed_from_step"] == 20 and run2["resume_checkpoint_step"] == 20, run2
assert [x["from_step"] for x in m["resumes"]] == [20], m["resumes"]
PY
for f in at.xml at.md at.html; do
  grep -q 'killed after step 20 and resumed from step 20' "$T/$f" || fail "$f does not say where run-2 resumed"
done
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/at-text" --vary resume=20 -q
grep -q '^  run-2: killed after step 20 and resumed from step 20 -> complete$' "$T/out" || fail "text: $(cat "$T/out")"

# N between checkpoints: resumed from the one before it.
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/between" --vary resume=27 -q
grep -q '^  run-2: killed after step 27 and resumed from step 20 -> complete$' "$T/out" || fail "27: $(cat "$T/out")"
[[ $(json_get "$T/between/run-2/manifest.json" resumes) == *'"from_step": 20'* ]] || fail "27: manifest resumes"

# No checkpoint by step N: exit 2 naming the first checkpoint, before run-2 trains.
expect_error '^reprun: error: --vary resume=7: the run saved no checkpoint by step 7: the first one is at step 10 \(training.checkpoint_every 10\).*give a step from 10 to 33' \
  "$REPRUN" check "$T/c.json" -o "$T/early" --vary resume=7 -q
[[ ! -e $T/early/run-2 ]] || fail "run-2 trained although no resume could be tested"

# A broken resume fails, exit 1: the optimizer state dropped at the restore (the selftest's fault)
# parts the runs at the first step after the checkpoint ...
REPRUN_SELFTEST_FAULT=drop-state expect_rc 1 "$REPRUN" check "$T/c.json" -o "$T/drop" --vary resume=25 -q
grep -q '^FAIL: 1 of 1 runs differ from run-1; run-2: .*step 21' "$T/out" || fail "drop-state: $(head -3 "$T/out")"
grep -q 'killed after step 25 and resumed from step 20' "$T/out" || fail "drop-state: $(head -5 "$T/out")"
# ... and a resume that ignores the checkpoint and trains the run again fails, though its numbers agree.
REPRUN_SELFTEST_FAULT=restart expect_rc 1 "$REPRUN" check "$T/c.json" -o "$T/restart" --vary resume=25 -q
grep -q '^FAIL: 1 of 1 runs differ from run-1; run-2: DIFFERENT: the resume continued from step 0, not from the checkpoint of step 20 the killed run left' "$T/out" ||
  fail "restart: $(head -3 "$T/out")"
grep -q 'killed after step 25 and resumed from step 0 -> complete' "$T/out" || fail "restart: $(head -5 "$T/out")"
grep -q 'train --resume did not continue from the killed run' "$T/out" || fail "restart: no cause: $(cat "$T/out")"

# docs/ci.md's example with the defaults: checkpoint_every is min(100, steps per epoch), here 100.
cp "$T/c.json" "$T/train.json"
json_edit "$T/train.json" data.samples=4000 training.epochs=2 training.checkpoint_every:delete training.eval_every:delete
expect_rc 0 "$REPRUN" check "$T/train.json" -o "$T/ci" --vary threads=1,2,4 --vary resume=150 -q
grep -q '^  run-2: threads=2; killed after step 150 and resumed from step 100 -> complete$' "$T/out" ||
  fail "ci.md example: $(cat "$T/out")"
grep -q '^  run-3: threads=4 -> complete$' "$T/out" || fail "ci.md example: $(cat "$T/out")"
pass
