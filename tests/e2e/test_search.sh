# reprun search: the same trials, promotions and winner for any --jobs; a SIGKILLed search continued
# with --resume ends byte for byte as an uninterrupted one; another experiment seed gives other
# trials; an asha trial promoted from its checkpoint equals a trial trained straight to its budget.
source "$(dirname "$0")/lib.sh"

# search_config FILE SEARCH_JSON: the wine data (testdata/wine) with a search section.
search_config() {
  cat >"$1" <<JSON
{"seed": 7,
 "data": {"kind": "csv", "path": "$TD/wine/wine.csv", "header": true, "validation_fraction": 0.25},
 "model": {"hidden": [16], "activation": "tanh", "dropout": 0.1},
 "optimizer": {"name": "adam", "lr": 0.01},
 "training": {"batch_size": 16, "epochs": 3, "checkpoint_every": 4},
 "search": $2}
JSON
}

# same_search A B: identical leaderboards and identical trial step logs, and diff agrees.
same_search() {
  for f in leaderboard.json leaderboard.txt leaderboard.md report.html; do
    cmp -s "$1/$f" "$2/$f" || fail "$f differs between $1 and $2"
  done
  local n=0
  for d in "$1"/trial-*; do
    cmp -s "$d/steps.jsonl" "$2/$(basename "$d")/steps.jsonl" || fail "$(basename "$d")/steps.jsonl differs ($1, $2)"
    cmp -s "$d/evals.jsonl" "$2/$(basename "$d")/evals.jsonl" || fail "$(basename "$d")/evals.jsonl differs ($1, $2)"
    n=$((n + 1))
  done
  [[ $n -gt 0 ]] || fail "no trials in $1"
  expect_rc 0 "$REPRUN" diff "$1" "$2"
  grep -q '^IDENTICAL: ' "$T/out" || fail "diff of $1 and $2: $(head -3 "$T/out")"
}

# -- random: jobs 1 and 2 ----------------------------------------------------------------------------
search_config "$T/random.json" '{"method": "random", "trials": 8,
  "space": {"optimizer.lr": {"log_uniform": [0.0003, 0.3]}, "model.hidden": {"choice": [[8], [16], [32, 16]]},
            "model.dropout": {"uniform": [0.0, 0.3]}}}'
expect_rc 0 "$REPRUN" search "$T/random.json" -o "$T/r1" --jobs 1 -q
grep -q '^best: trial ' "$T/out" || fail "no best trial printed: $(head -3 "$T/out")"
expect_rc 0 "$REPRUN" search "$T/random.json" -o "$T/r2" --jobs 2 -q
same_search "$T/r1" "$T/r2"
[[ -f $T/r1/timings.json ]] || fail "no timings.json"
grep -q 'seconds' "$T/r1/leaderboard.json" && fail "the leaderboard holds timings"
# each trial is a run directory whose manifest records the search
python3 - "$T/r1" <<'PY' || fail "trial manifests"
import json, sys, os
d = sys.argv[1]
board = json.load(open(os.path.join(d, "leaderboard.json")))
assert len(board["trials"]) == 8 and board["best"]["rank"] == 1, board
seeds = set()
for t in board["trials"]:
    m = json.load(open(os.path.join(d, t["dir"], "manifest.json")))
    s = m["search"]
    assert s["trial"] == t["trial"] and s["seed"] == t["seed"] == m["config"]["seed"], s
    assert s["experiment_seed"] == 7 and m["config"]["data"]["seed"] == 7, m["config"]["data"]
    assert m["config"]["optimizer"]["lr"] == s["values"]["optimizer.lr"] == t["values"]["optimizer.lr"]
    assert 0.0003 <= s["values"]["optimizer.lr"] <= 0.3
    assert s["values"]["model.hidden"] in ([8], [16], [32, 16])
    seeds.add(s["seed"])
assert len(seeds) == 8, seeds
metrics = [t["metric"] for t in board["trials"] if t["metric"] is not None]
assert metrics == sorted(metrics), metrics
PY

# -- another experiment seed: other trials; diff names the first trial -------------------------------
expect_rc 0 "$REPRUN" search "$T/random.json" -o "$T/r3" --set seed=8 -q
cmp -s "$T/r1/leaderboard.json" "$T/r3/leaderboard.json" && fail "seed 8 gave the same leaderboard as seed 7"
expect_rc 1 "$REPRUN" diff "$T/r1" "$T/r3"
grep -q '^DIFFERENT: experiment seed: 7 vs 8; trial 0 is the first that differs' "$T/out" ||
  fail "diff of two seeds: $(head -5 "$T/out")"
grep -q 'experiment seed: 7 vs 8' "$T/out" || fail "diff does not name the seed: $(head -8 "$T/out")"

# -- SIGKILL in the middle, then --resume: the same result, byte for byte ------------------------------
"$REPRUN" search "$T/random.json" -o "$T/k" --jobs 2 -q >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [[ -f $T/k/trial-0004/steps.jsonl ]] && [[ $(wc -l <"$T/k/trial-0004/steps.jsonl") -ge 5 ]] && break
  sleep 0.02
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
[[ -f $T/k/leaderboard.json ]] && fail "the search finished before it could be killed; the test measures nothing"
sleep 0.2 # the trials die with the search (PR_SET_PDEATHSIG)
expect_rc 0 "$REPRUN" search --resume "$T/k" --jobs 1 -q
same_search "$T/r1" "$T/k"
# resuming a complete search changes nothing
expect_rc 0 "$REPRUN" search --resume "$T/k" -q
same_search "$T/r1" "$T/k"

# -- asha: promotions identical across --jobs; a promoted trial equals a straight run ----------------
search_config "$T/asha.json" '{"method": "asha", "trials": 9, "min_epochs": 1, "max_epochs": 9, "reduction": 3,
  "space": {"optimizer.lr": {"log_uniform": [0.0003, 0.3]}, "model.dropout": {"uniform": [0.0, 0.3]}}}'
expect_rc 0 "$REPRUN" search "$T/asha.json" -o "$T/a1" --jobs 1 -q
expect_rc 0 "$REPRUN" search "$T/asha.json" -o "$T/a2" --jobs 2 -q
same_search "$T/a1" "$T/a2"
best=$(python3 - "$T/a1" <<'PY'
import json, sys
b = json.load(open(sys.argv[1] + "/leaderboard.json"))
rungs = sorted(t["rung"] for t in b["trials"])
assert rungs == [0] * 6 + [1] * 2 + [2], rungs
assert b["best"]["rung"] == 2 and b["best"]["epochs"] == 9, b["best"]
print(b["best"]["dir"])
PY
) || fail "asha rungs"
sets=()
while IFS= read -r s; do sets+=(--set "$s"); done < <(python3 - "$T/a1/$best/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for s in m["config_file"]["overrides"]:
    if not s.startswith("training.epochs="):
        print(s)
print("training.epochs=9")
PY
)
expect_rc 0 "$REPRUN" train "$T/asha.json" -o "$T/straight" -q "${sets[@]}"
cmp -s "$T/a1/$best/steps.jsonl" "$T/straight/steps.jsonl" || fail "the promoted $best differs from a straight 9-epoch run"

# -- tpe: trial k sees trials 0..k-batch-1 only, so any --jobs gives the same search -----------------
search_config "$T/tpe.json" '{"method": "tpe", "trials": 12, "batch": 2, "startup": 4,
  "space": {"optimizer.lr": {"log_uniform": [0.0003, 0.3]}, "training.batch_size": {"int_uniform": [8, 48]},
            "model.hidden": {"choice": [[8], [16]]}}}'
expect_rc 0 "$REPRUN" search "$T/tpe.json" -o "$T/t1" --jobs 1 -q
expect_rc 0 "$REPRUN" search "$T/tpe.json" -o "$T/t2" --jobs 3 -q
same_search "$T/t1" "$T/t2"
python3 - "$T/t1" <<'PY' || fail "tpe samplers"
import json, sys
b = json.load(open(sys.argv[1] + "/leaderboard.json"))
by = {t["trial"]: t["sampler"] for t in b["trials"]}
# trial k uses trials 0..k-3: the first model-based trial is k = startup + batch = 6
assert [by[k] for k in range(12)] == ["tpe-startup"] * 6 + ["tpe"] * 6, by
PY

# -- grid: every point once, in order ----------------------------------------------------------------
search_config "$T/grid.json" '{"method": "grid",
  "space": {"optimizer.lr": {"log_uniform": [0.001, 0.1], "points": 3}, "model.hidden": {"choice": [[8], [16]]}}}'
expect_rc 0 "$REPRUN" search "$T/grid.json" -o "$T/g" -q
python3 - "$T/g" <<'PY' || fail "grid points"
import json, sys
b = json.load(open(sys.argv[1] + "/leaderboard.json"))
pts = sorted((t["trial"], t["values"]["model.hidden"][0], round(t["values"]["optimizer.lr"], 12)) for t in b["trials"])
assert pts == [(0, 8, 0.001), (1, 16, 0.001), (2, 8, 0.01), (3, 16, 0.01), (4, 8, 0.1), (5, 16, 0.1)], pts
PY

# -- check: the CI gate on a search config, varying the jobs ------------------------------------------
expect_rc 0 "$REPRUN" check "$T/tpe.json" --vary jobs=1,2 -o "$T/ck"
grep -q '^PASS: 2 searches identical' "$T/out" || fail "check of a search: $(head -5 "$T/out")"
expect_error "--vary jobs: varies a search's parallelism" "$REPRUN" check "$EX/quickstart.json" --vary jobs=1,2
expect_error "a search check varies jobs only" "$REPRUN" check "$T/tpe.json" --vary threads=1,2

# -- bad input: one line, exit 2, the file and the key named -------------------------------------------
search_config "$T/bad1.json" '{"method": "random", "trials": 4, "space": {"optimizer.lr": {"uniform": [0.3, 0.1]}}}'
expect_error 'bad1.json: search.space.optimizer.lr.uniform: empty range' "$REPRUN" search "$T/bad1.json" -o "$T/b1"
[[ -e $T/b1 ]] && fail "a refused search left a directory"
search_config "$T/bad2.json" '{"method": "random", "trials": 4, "space": {"optimizer.learning_rate": {"uniform": [0.1, 0.3]}}}'
expect_error "search.space.optimizer.learning_rate: not a config key \\(did you mean 'optimizer.lr'" \
  "$REPRUN" search "$T/bad2.json" -o "$T/b2"
search_config "$T/bad3.json" '{"method": "random", "trails": 4, "space": {"optimizer.lr": {"uniform": [0.1, 0.3]}}}'
expect_error "search.trails: unknown key \\(did you mean 'trials'" "$REPRUN" search "$T/bad3.json" -o "$T/b3"
search_config "$T/bad4.json" '{"method": "random", "trials": 4, "space": {"determinism.threads": {"choice": [1, 2]}}}'
expect_error 'search.space.determinism.threads: cannot be searched: an execution setting' \
  "$REPRUN" search "$T/bad4.json" -o "$T/b4"
search_config "$T/bad5.json" '{"method": "random", "trials": 4, "space": {"model.hidden": {"choice": [[16], [0]]}}}'
expect_error 'search.space.model.hidden: the value \[0\] cannot be trained' "$REPRUN" search "$T/bad5.json" -o "$T/b5"
search_config "$T/bad6.json" '{"method": "random", "trials": 4, "space": {"training.batch_size": {"uniform": [8, 64]}}}'
expect_error 'search.space.training.batch_size: the value .* cannot be trained: .*integer' \
  "$REPRUN" search "$T/bad6.json" -o "$T/b6"
expect_error 'random.json: search: this config describes a hyperparameter search: run it with reprun search' \
  "$REPRUN" train "$T/random.json" -o "$T/b7"
expect_error 'r1: already holds a search; continue it with --resume' "$REPRUN" search "$T/random.json" -o "$T/r1"
search_config "$T/bad8.json" '{"method": "random", "trials": 4, "space": {"optimizer.lr": {"uniform": [0.01, 1e400]}}}'
expect_error 'bad8.json:[0-9]+:[0-9]+: invalid JSON: the number 1e400 is beyond the range of a double' \
  "$REPRUN" search "$T/bad8.json" -o "$T/b8"
# Two searches stopped at the same point are identical, and the verdict says they are incomplete.
cp -r "$T/r1" "$T/i1"
rm -rf "$T/i1/trial-0002" "$T/i1/leaderboard."*
cp -r "$T/i1" "$T/i2"
expect_rc 0 "$REPRUN" diff "$T/i1" "$T/i2"
grep -q '^IDENTICAL: 8 trials with the same values and bitwise identical runs, 1 of them not finished in either search (both incomplete); the same ranking so far$' "$T/out" ||
  fail "diff of two incomplete searches: $(head -1 "$T/out")"
# A hand-edited search.json or trial summary of the wrong type: one line naming the file and the key.
edit_json() { # edit_json FILE PYTHON-STATEMENT-ON-d
  python3 - "$1" "$2" <<'PY' || fail "edit_json $1"
import json, sys
p = sys.argv[1]
d = json.load(open(p))
exec(sys.argv[2])
json.dump(d, open(p, "w"))
PY
}
cp -r "$T/r1" "$T/e1"
edit_json "$T/e1/search.json" 'd["search"]["trials"] = "4"'
expect_error 'e1/search.json: corrupt search manifest: search.trials is "4", expected an integer' \
  "$REPRUN" diff "$T/r1" "$T/e1"
cp -r "$T/r1" "$T/e2"
edit_json "$T/e2/trial-0001/summary.json" 'd["status"] = 5'
expect_error 'e2/trial-0001/summary.json: corrupt summary: "status" is 5, expected a string' \
  "$REPRUN" diff "$T/r1" "$T/e2"
cp -r "$T/r1" "$T/e3"
edit_json "$T/e3/trial-0001/manifest.json" 'd["search"]["seed"] = "x"'
expect_error 'e3/trial-0001/manifest.json: corrupt trial manifest: type must be number, but is string' \
  "$REPRUN" diff "$T/r1" "$T/e3"
# A search stopped before a trial started, against a finished one: the trial's status is the
# difference (it has no seed yet, not seed 0).
cp -r "$T/r1" "$T/e0"
rm -rf "$T/e0/trial-0002"
expect_rc 1 "$REPRUN" diff "$T/r1" "$T/e0"
grep -q '^DIFFERENT: trial 2 is the first that differs (status: complete vs not started)$' "$T/out" ||
  fail "diff with a trial not started: $(head -3 "$T/out")"
grep -q 'seed: ' "$T/out" && fail "diff compares the seed of a trial not started: $(cat "$T/out")"
# reduction "atomic" (in the space or in the base config): no trial could be trained again to its bits.
search_config "$T/bad11.json" '{"method": "random", "trials": 4, "space": {"determinism.reduction": {"choice": ["ordered", "atomic"]}}}'
expect_error 'search.space.determinism.reduction: cannot be searched: "atomic" is non-deterministic by design' \
  "$REPRUN" search "$T/bad11.json" -o "$T/b11"
search_config "$T/bad12.json" '{"method": "random", "trials": 4, "space": {"optimizer.lr": {"uniform": [0.1, 0.3]}}}'
json_edit "$T/bad12.json" 'determinism+={"reduction": "atomic"}'
expect_error 'bad12.json: determinism.reduction: "atomic" is non-deterministic by design' \
  "$REPRUN" search "$T/bad12.json" -o "$T/b12"
[[ -e $T/b12 ]] && fail "a refused search left a directory"
search_config "$T/bad10.json" '{"method": "random", "trials": 4, "trials": 5, "space": {"optimizer.lr": {"uniform": [0.1, 0.3]}}}'
expect_error 'bad10.json: search.trials: given twice in one object' "$REPRUN" search "$T/bad10.json" -o "$T/b10"
# A report that could not be written is refused before the first trial, not after the last.
expect_error "nope/l.html: cannot write the report there: .*nope is not a directory" \
  "$REPRUN" search "$T/random.json" -o "$T/b9" --html "$T/nope/l.html"
[[ -e $T/b9 ]] && fail "search trained before refusing --html in a missing folder"
# One trial is "1 trial".
expect_rc 0 "$REPRUN" search "$T/random.json" -o "$T/one" --set search.trials=1 --markdown "$T/one.md"
grep -q '^SEARCH random: 1 trial, ' "$T/out" || fail "one-trial header: $(head -1 "$T/out")"
grep -q 'random search, 1 trial, ' "$T/one.md" || fail "one-trial Markdown: $(head -3 "$T/one.md")"
# A fork of a trial is no trial: its manifest's search facts move under forked_from.
expect_rc 0 "$REPRUN" train --resume "$T/one/trial-0000" -o "$T/fork" -q
python3 - "$T/fork/manifest.json" <<'PY' || fail "the fork of a trial: $(head -c 600 "$T/fork/manifest.json")"
import json, sys
m = json.load(open(sys.argv[1]))
assert "search" not in m, "the fork claims to be a search trial"
assert m["forked_from"]["search"]["trial"] == 0, m["forked_from"]
PY
pass
