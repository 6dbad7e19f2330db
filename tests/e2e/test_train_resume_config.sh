# Resuming with a config: the config is compared with the run's after both are resolved (a CSV
# config that leaves data.classes, the header or the label column to the data resumes), and a
# config that really differs is refused naming the first differing key and both values.
source "$(dirname "$0")/lib.sh"

# The wine example (no data.classes, label column -1): killed, then resumed with its config.
expect_rc 0 "$REPRUN" train "$EX/wine-csv.json" -o "$T/wine_full" -q
run_rc "$REPRUN" train "$EX/wine-csv.json" -o "$T/wine" -q --kill-after-step 60
[[ $RC == 137 ]] || fail "expected SIGKILL (137), got $RC"
expect_rc 0 "$REPRUN" train "$EX/wine-csv.json" --resume "$T/wine" -q
cmp -s "$T/wine_full/steps.jsonl" "$T/wine/steps.jsonl" || fail "wine resumed with its config differs"
cmp -s "$T/wine_full/evals.jsonl" "$T/wine/evals.jsonl" || fail "wine evals resumed with its config differ"

# A CSV table with header "auto", no classes: resumed with the same config, then with others.
python3 - "$T/t.csv" <<'PY'
import random, sys
rng = random.Random(4)
with open(sys.argv[1], "w") as f:
    f.write("x1,x2,x3,label\n")
    for _ in range(240):
        y = rng.randrange(3)
        f.write(",".join(f"{rng.gauss(y * 1.5, 1.0):.4f}" for _ in range(3)) + f",{y}\n")
PY
cat >"$T/c.json" <<'JSON'
{"seed": 3, "data": {"kind": "csv", "path": "t.csv"}, "model": {"hidden": [8]},
 "training": {"batch_size": 16, "epochs": 4, "checkpoint_every": 10}}
JSON
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/full" -q
run_rc "$REPRUN" train "$T/c.json" -o "$T/k" -q --kill-after-step 23
[[ $RC == 137 ]] || fail "expected SIGKILL (137), got $RC"
[[ $(json_get "$T/k/manifest.json" config.data.classes) == 3 ]] || fail "classes not resolved in the manifest"

# Another learning rate: refused, both values named, nothing changed.
cp "$T/c.json" "$T/lr.json" && json_edit "$T/lr.json" optimizer+='{"lr": 0.1}'
cp "$T/k/steps.jsonl" "$T/steps.before"
expect_error "lr.json: differs from the configuration of the run being resumed \(.*/k/manifest.json\): optimizer.lr is 0.1 here, 0.05 in the run; resume without a config, or start a new run" \
  "$REPRUN" train "$T/lr.json" --resume "$T/k"
cmp -s "$T/steps.before" "$T/k/steps.jsonl" || fail "a refused resume changed the step log"
# A value the data resolved, given differently: named with both values.
cp "$T/c.json" "$T/classes.json" && json_edit "$T/classes.json" data.classes+=4
expect_error 'classes.json: differs .*: data.classes is 4 here, 3 in the run' "$REPRUN" train "$T/classes.json" --resume "$T/k"
cp "$T/c.json" "$T/label.json" && json_edit "$T/label.json" data.label_column+=2
expect_error 'label.json: differs .*: data.label_column is 2 here, 3 in the run' "$REPRUN" train "$T/label.json" --resume "$T/k"
# Execution settings may differ (the run's own apply).
cp "$T/c.json" "$T/exec.json" && json_edit "$T/exec.json" training.checkpoint_every=5 determinism+='{"threads": 1}'
# The same config, resolved values written out or not: resumes and finishes identical.
cp "$T/c.json" "$T/resolved.json" && json_edit "$T/resolved.json" data.classes+=3 data.header+=true data.label_column+=3
run_rc "$REPRUN" train "$T/resolved.json" --resume "$T/k" -q --kill-after-step 31
[[ $RC == 137 ]] || fail "resume with the resolved config: expected SIGKILL (137) after step 31, got $RC: $(cat "$T/err")"
expect_rc 0 "$REPRUN" train "$T/exec.json" --resume "$T/k"
# The config's own execution settings are not applied on resume, and the user is told so.
grep -q "exec.json: training.checkpoint_every is 5 there but .* in the run; a resume keeps the run's (--set training.checkpoint_every=5 applies the config's)" \
  "$T/err" || fail "unapplied execution setting not noted: $(cat "$T/err")"
cmp -s "$T/full/steps.jsonl" "$T/k/steps.jsonl" || fail "resumed with the config: steps differ"
cmp -s "$T/full/evals.jsonl" "$T/k/evals.jsonl" || fail "resumed with the config: evals differ"
grep -q '"status": "complete"' "$T/k/summary.json" || fail "resumed run is not complete"
pass
