# What check says must be true (issue 41): a config without a seed gets one seed for all its runs,
# never a false "not deterministic" (item 2); an atomic reduction that passes is said to have been
# expected to differ (item 7); a check that exits 2 writes its error into its reports (item 8); the
# runs' logs say what train said, also on a pass
# (item 9).
source "$(dirname "$0")/lib.sh"
small_config "$T/c.json"

# Item 2: no seed. Before, each run drew its own, check failed with "three replays ... did not
# reproduce the divergence (it is not deterministic)" and "set seed back to ..." as a fix.
json_edit "$T/c.json" seed:delete
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/noseed" --vary threads=1,2 -q
grep -q '^PASS: 2 runs bitwise identical' "$T/out" || fail "no seed: $(cat "$T/out")"
seed=$(json_get "$T/noseed/run-1/manifest.json" config.seed)
[[ $(json_get "$T/noseed/run-2/manifest.json" config.seed) == "$seed" ]] || fail "no seed: the runs trained with other seeds"
grep -q "^  note: .*c.json sets no seed: every run of this check trains with seed $seed, drawn once for the check" "$T/out" ||
  fail "no seed: the report does not say which seed: $(cat "$T/out")"
! grep -qi 'not deterministic' "$T/out" || fail "no seed: $(cat "$T/out")"
# ... the same for a resume (the resumed process reads the run's seed) ...
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/noseed-resume" --vary resume=15 -q --format json
[[ $(json_get "$T/out" identical) == true ]] || fail "no seed, resume: $(head -c 2000 "$T/out")"
# ... and for a config with a search section, whose searches drew an experiment seed each.
cp "$T/c.json" "$T/search.json"
json_edit "$T/search.json" training.epochs=1 'search+={"method": "random", "trials": 2, "space": {"optimizer.lr": {"log_uniform": [0.01, 0.1]}}}'
expect_rc 0 "$REPRUN" check "$T/search.json" -o "$T/search" --vary jobs=1,2 -q
grep -q '^PASS: 2 searches identical' "$T/out" || fail "search without a seed: $(cat "$T/out")"
grep -q 'search.json sets no seed: every search of this check runs with experiment seed [0-9]*, drawn once' "$T/out" ||
  fail "search without a seed: no note: $(cat "$T/out")"
# ... and a config with a seed keeps it and gets no note.
json_edit "$T/c.json" seed+=5
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/seed" -q
! grep -q 'sets no seed' "$T/out" || fail "a config with a seed got the note: $(cat "$T/out")"
[[ $(json_get "$T/seed/run-2/manifest.json" config.seed) == 5 ]] || fail "seed 5 not kept"

# Item 7: an atomic reduction that cannot differ (batch 16: 2 chunks of 8 samples, whose partials
# add to the same bits in either order) passes, as its bits are equal, but check says it expected a
# difference and why (before: a plain PASS). From 17 rows per micro-batch it fails, 1 thread or not.
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/atomic16" --vary threads=1,1 -q --format json \
  --set determinism.reduction=atomic --set training.batch_size=16 --junit "$T/atomic16.xml"
grep -q '<system-out>note: warning: determinism.reduction is &quot;atomic&quot;, which check expects to differ' "$T/atomic16.xml" ||
  fail "atomic, batch 16: the JUnit report lacks the warning: $(cat "$T/atomic16.xml")"
python3 - "$T/out" <<'PY' || fail "atomic, batch 16: $(head -c 3000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["identical"] is True, r["verdict"]
assert any(n.startswith('warning: determinism.reduction is "atomic", which check expects to differ, yet the 2 runs '
                        'are identical: here a micro-batch has at most 16 rows (training.batch_size 16, accumulation '
                        '1), 2 chunks of 8 samples') for n in r.get("notes", [])), r.get("notes")
PY
expect_rc 1 "$REPRUN" check "$T/c.json" -o "$T/atomic17" --vary threads=1,1 -q \
  --set determinism.reduction=atomic --set training.batch_size=17
! grep -q 'expects to differ' "$T/out" || fail "a failing atomic check got the warning"
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/ordered16" --vary threads=1,2 -q --set training.batch_size=16
! grep -q 'expects to differ' "$T/out" || fail "an ordered check got the warning"

# Item 8: a check that cannot give a verdict (exit 2) writes the error into its reports, so that a
# CI test view shows it (before: no --junit, --html or --markdown file at all).
for case in "epochs --set training.epochs=0" "resume --vary resume=3"; do
  set -- $case
  name=$1
  shift
  GITHUB_STEP_SUMMARY="$T/$name.summary" expect_rc 2 "$REPRUN" check "$T/c.json" -o "$T/err-$name" -q "$@" \
    --junit "$T/$name.xml" --html "$T/$name.html" --markdown "$T/$name.md" --json "$T/$name.json"
  error=$(sed 's/^reprun: error: //' "$T/err")
  python3 - "$T/$name.xml" "$error" <<'PY' || fail "$name: junit: $(cat "$T/$name.xml")"
import sys, xml.etree.ElementTree as E
root = E.parse(sys.argv[1]).getroot()
assert root.get("errors") == "1" and root.get("failures") == "0", root.attrib
errors = root.findall("./testsuite/testcase/error")
assert len(errors) == 1 and errors[0].get("message") == sys.argv[2], (errors[0].attrib if errors else None, sys.argv[2])
PY
  python3 - "$T/$name.json" "$error" <<'PY' || fail "$name: json: $(cat "$T/$name.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["identical"] is False and r["error"] == sys.argv[2] and r["verdict"] == "ERROR: " + sys.argv[2], r
PY
  for f in "$name.html" "$name.md" "$name.summary"; do
    grep -qF "ERROR: ${error//&/&amp;}" "$T/$f" || grep -qF "ERROR: $error" "$T/$f" || fail "$name: $f lacks the error: $(cat "$T/$f")"
  done
done
grep -q 'training.epochs: must be between 1' "$T/epochs.xml" || fail "epochs: $(cat "$T/epochs.xml")"
grep -q 'the run saved no checkpoint by step 3' "$T/resume.xml" || fail "resume: $(cat "$T/resume.xml")"

# Item 9: on a pass, the runs' logs hold what train printed (before: empty, with every child --quiet).
for i in 1 2; do
  grep -q '^reprun: data: 600 rows, 12 features, 3 classes' "$T/seed/run-$i.log" || fail "run-$i.log: $(cat "$T/seed/run-$i.log")"
  grep -q '^status: complete$' "$T/seed/run-$i.log" || fail "run-$i.log lacks the status: $(cat "$T/seed/run-$i.log")"
done
grep -q '^reprun: resuming .*run-2 from step 10$' "$T/noseed-resume/run-2.log" || fail "the resumed run's log: $(cat "$T/noseed-resume/run-2.log")"
pass
