# reprun check: passes under varied threads, accumulation and a kill/resume with ordered reduction;
# fails with reduction atomic and localizes the divergence to a backward (gradient) tensor.
source "$(dirname "$0")/lib.sh"
small_config "$T/c.json"
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/w1" --vary threads=1,2,3 -q
grep -q '^PASS: 3 runs bitwise identical' "$T/out" || fail "check threads: $(head -1 "$T/out")"
[[ -d "$T/w1/run-3" ]] || fail "run-3 missing"
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/w2" --vary resume=15 --vary threads=2,1 -q --junit "$T/w2.xml" --json "$T/w2.json"
grep -q '^PASS: 2 runs bitwise identical' "$T/out" || fail "--json FILE: the text report is not on stdout: $(head -3 "$T/out")"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['identical'] is True and len(r['pairs']) == 1, r" "$T/w2.json" ||
  fail "--json FILE: $(head -c 1000 "$T/w2.json")"
grep -q 'run-2: threads=1; killed after step 15 and resumed from step 10 -> complete' "$T/out" || fail "resume variation: $(cat "$T/out" | head -5)"
python3 -c "import xml.etree.ElementTree as E,sys; t=E.parse(sys.argv[1]).getroot(); assert t.get('failures')=='0'" "$T/w2.xml" || fail "junit"
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/w3" --vary accumulation=1,2,4 -q --format json
python3 - "$T/out" <<'PYEOF' || fail "accumulation not reported as varied: $(head -c 2000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["identical"] is True and len(r["pairs"]) == 2
m = [x for x in r["pairs"][1]["diff"]["metadata"] if x["key"] == "config.training.accumulation"]
assert m and m[0]["kind"] == "varied" and m[0]["a"] == "1" and m[0]["b"] == "4", m
PYEOF

# The deliberately divergent check.
export GITHUB_STEP_SUMMARY="$T/summary.md"
# 2000 samples, batch 128, 3 epochs: 45 steps with 16 partials per layer each.
json_edit "$T/c.json" 'model.hidden=[64,64]' training.batch_size=128 data.samples=2000 training.epochs=3
expect_rc 1 "$REPRUN" check "$T/c.json" -o "$T/w4" --vary threads=4,4 --set determinism.reduction=atomic -q \
  --format json --html "$T/w4.html" --markdown "$T/w4.md"
expect_backward_localization "$T/out" "atomic check"
python3 - "$T/out" <<'PYEOF' || fail "atomic check: the localization's sentence or cause: $(head -c 3000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
loc = r["pairs"][0]["localization"]
assert loc["sentence"].startswith("step %d, origin backward, layer " % loc["step"]), loc["sentence"]
# One origin: the diff of the pair names the replay's entry, and the cause is the atomic reduction.
d = r["pairs"][0]["diff"]
assert d["divergence"]["origin"]["entry"] == loc["entry"], d["divergence"]
assert d["diagnosis"][0]["fix"] == "set determinism.reduction: ordered", d["diagnosis"]
PYEOF
grep -q 'Localization' "$T/w4.md" || fail "markdown report lacks the localization"
grep -q 'reprun check ❌' "$T/summary.md" || fail "GITHUB_STEP_SUMMARY not appended"
grep -q '<svg id="loss-plot"' "$T/w4.html" || fail "html report lacks the plot"
[[ -d "$T/w4/replay-1-vs-2/a" ]] || fail "replay directory missing"

# Errors.
expect_error "unknown dimension 'thread'.*did you mean 'threads'" "$REPRUN" check "$T/c.json" --vary thread=1,2 -q
expect_error "'x' is not a positive integer" "$REPRUN" check "$T/c.json" --vary threads=1,x -q
# A report that could not be written at the end is refused before anything trains.
expect_error "$T: is a directory; give the report a file name" "$REPRUN" check "$T/c.json" -o "$T/ck-junit" --junit "$T" -q
[[ -e $T/ck-junit ]] && fail "check trained before refusing --junit DIR"
expect_error "nope/r.md: cannot write the report there: .*nope is not a directory" \
  "$REPRUN" check "$T/c.json" -o "$T/ck-md" --markdown "$T/nope/r.md" -q
[[ -e $T/ck-md ]] && fail "check trained before refusing --markdown in a missing folder"
expect_error "nope/r.json: cannot write the report there: .*nope is not a directory" \
  "$REPRUN" check "$T/c.json" -o "$T/ck-json" --json "$T/nope/r.json" -q
[[ -e $T/ck-json ]] && fail "check trained before refusing --json in a missing folder"
printf '{"optimizer": {"lr": "x"}}' >"$T/bad.json"
# Refused as train refuses it, before run-1 trains (check reads the config for its seed).
expect_error '^reprun: error: .*bad.json: optimizer.lr: expected a number' "$REPRUN" check "$T/bad.json" -o "$T/w5" -q
[[ -e $T/w5/run-1 ]] && fail "check trained run-1 of a config it refuses"
pass
