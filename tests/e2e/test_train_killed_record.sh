# What a killed run's record says, and what a resume trusts in it (issue 41). Item 6: a value
# edited in the manifest's config is refused on --resume, naming the key (before, the resume went
# on with the edited learning rate, silently). Item 8: a run killed before any checkpoint has an
# unknown train_loss (null, "-" in diff; before 0.0), and one killed after a checkpoint has a
# summary that says what that checkpoint holds.
source "$(dirname "$0")/lib.sh"
small_config "$T/c.json" # a checkpoint every 10 steps
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/full" -q

# Item 8: killed after step 5, before any checkpoint.
expect_rc 137 "$REPRUN" train "$T/c.json" -o "$T/k5" -q --kill-after-step 5
python3 - "$T/k5/summary.json" <<'PY' || fail "killed at 5: $(cat "$T/k5/summary.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["status"] == "running" and s["steps"] == 0, s
assert s["train_loss"] is None and s.get("steps_per_second") is None and s.get("gemm_seconds") is None, s
PY
NO_COLOR=1 expect_rc 1 "$REPRUN" diff "$T/k5" "$T/full"
grep -qE '^  train_loss +- +[0-9]' "$T/out" || fail "diff should print an unknown train_loss as -: $(cat "$T/out")"
# Killed after step 23: the summary of the checkpoint of step 20, its loss the log's.
expect_rc 137 "$REPRUN" train "$T/c.json" -o "$T/k23" -q --kill-after-step 23
python3 - "$T/k23/summary.json" "$T/full/steps.jsonl" <<'PY' || fail "killed at 23: $(cat "$T/k23/summary.json")"
import json, sys
s = json.load(open(sys.argv[1]))
loss = {r["step"]: r.get("loss") for r in map(json.loads, open(sys.argv[2]))}
assert s["status"] == "running" and s["steps"] == 20 and s["train_loss"] == loss[20], (s, loss[20])
assert s["steps_per_second"] > 0 and s["steps_log"]["records"] == 21, s
# The loop's time in the matrix products (CPU backend): part of the loop's time, never more.
assert 0 < s["gemm_seconds"] < 20 / s["steps_per_second"], s
PY

# Item 6: the learning rate edited in the manifest of the killed run.
cp -r "$T/k23" "$T/k23-unchanged"
python3 - "$T/k23/manifest.json" "$T/k23-unchanged/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["config"]["optimizer"]["lr"] = 0.5
json.dump(m, open(sys.argv[1], "w"), indent=1)
m = json.load(open(sys.argv[2]))
m["config"]["determinism"]["threads"] = 1  # an execution setting: the digest leaves it out
json.dump(m, open(sys.argv[2], "w"), indent=1)
PY
expect_error "^reprun: error: .*k23/manifest.json: config.optimizer.lr: changed since the run started: the config no longer matches its config_digest" \
  "$REPRUN" train --resume "$T/k23"
expect_error "k23/manifest.json: config.optimizer.lr: changed since the run started" \
  "$REPRUN" train --resume "$T/k23" -o "$T/fork" --from-step 20 # a fork reads the same record
[[ ! -e $T/fork ]] || fail "a refused fork left a directory"
# Rewritten with the same values (another JSON writer) and an execution setting changed: resumes.
expect_rc 0 "$REPRUN" train --resume "$T/k23-unchanged" -q
cmp -s "$T/full/steps.jsonl" "$T/k23-unchanged/steps.jsonl" || fail "the resumed run differs from the full one"
# A run recorded without the key digests (an older reprun): refused too, without a key to name.
cp -r "$T/k23" "$T/k23-old"
python3 - "$T/k23-old/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
del m["config_key_digests"]
json.dump(m, open(sys.argv[1], "w"), indent=1)
PY
expect_error "k23-old/manifest.json: config: changed since the run started" "$REPRUN" train --resume "$T/k23-old"
pass
