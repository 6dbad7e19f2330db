# reprun diff on the hand-made run directories of testdata/runs: every classification, metadata
# ranking, tolerance edge cases, truncated logs, corrupt and future-format inputs, and each report
# format parsed back.
source "$(dirname "$0")/lib.sh"
R="$TD/runs"
D() { "$REPRUN" diff "$@"; }

expect_rc 0 D "$R/base" "$R/same"
grep -q '^IDENTICAL: 7 step records bitwise identical, metadata matches' "$T/out" || fail "identical verdict: $(head -1 "$T/out")"
grep -q 'expected to differ: created, host.hostname' "$T/out" || fail "volatile fields not listed apart"

expect_rc 1 D "$R/base" "$R/data_order"
grep -q 'runs part at step 3 (data order)' "$T/out" || fail "data order: $(head -1 "$T/out")"

expect_rc 1 D "$R/base" "$R/initial_state"
grep -q 'runs part at step 0 (initial state)' "$T/out" || fail "initial state: $(head -1 "$T/out")"
grep -q 'first differing tensor in model order: dense_1.weight' "$T/out" || fail "initial state: tensor not named"

expect_rc 1 D "$R/base" "$R/computation"
grep -q 'runs part at step 4 (computation)' "$T/out" || fail "computation verdict"
# One origin, first in computation order (backward runs from the last layer); the first tensor in
# model order is its effect.
grep -q 'origin: step 4, backward, layer dense_2, weight gradient (dense_2.weight.grad): the first differing value in computation order' "$T/out" ||
  fail "computation: origin"
grep -q 'first differing tensor in model order: dense_1.weight, an effect of the origin' "$T/out" ||
  fail "computation: first tensor in model order as the origin's effect"
sed -n '/^Likely cause and fix/,$p' "$T/out" | grep -q 'fix: ' || fail "computation: no likely cause and fix at the end"
grep -q 'the loss differs from step 5' "$T/out" || fail "computation: loss differs from"
grep -q 'dense_1.weight: norm A 5  B 5.0000002  relative 4e-08' "$T/out" || fail "computation: norm magnitude"
grep -qE '^ +6 +0.1428571429 +0.1428572429 +1e-07  \(peak, last common step\)' "$T/out" || fail "gap growth table"
grep -q '^  peak gap: |diff| 1e-07 at step 6$' "$T/out" || fail "gap growth table: peak line"

expect_rc 1 D "$R/base" "$R/ended_early"
grep -q 'run ended early (B stops after 4 records, A has 7)' "$T/out" || fail "ended early: $(head -1 "$T/out")"
grep -q 'statuses: A complete, B interrupted' "$T/out" || fail "ended early: statuses"
grep -q 'last line is incomplete (23 bytes' "$T/out" || fail "partial last line not noted"

expect_rc 1 D "$R/base" "$R/meta_changed"
grep -q 'step records identical, but 3 metadata fields differ' "$T/out" || fail "meta verdict: $(head -1 "$T/out")"
grep -q '\[dataset\] dataset differs: 1 file added (part-004.csv, 8,120 bytes), 0 removed, 0 changed' "$T/out" || fail "dataset sentence"
grep -q '\[config\] config.optimizer.lr: 0.05 -> 0.1' "$T/out" || fail "lr change not named"
grep -q 'config.determinism.threads: 2 -> 4 (cannot change a result)' "$T/out" || fail "threads not informational"
# Ranked: dataset before config.
[[ $(grep -n '\[dataset\]' "$T/out" | head -1 | cut -d: -f1) -lt $(grep -n '\[config\]' "$T/out" | head -1 | cut -d: -f1) ]] ||
  fail "dataset should rank above config"
expect_rc 0 D "$R/base" "$R/meta_changed" --ignore-meta data --ignore-meta config.optimizer.lr

# Tolerance mode: 1 ulp and -0.0/0.0 match within max-ulps 1, not bitwise.
expect_rc 1 D "$R/tolerance_a" "$R/tolerance_b"
expect_rc 0 D "$R/tolerance_a" "$R/tolerance_b" --max-ulps 1
grep -q 'mode: tolerance (max-ulps=1); checksums informational' "$T/out" || fail "tolerance mode not reported"
expect_rc 1 D "$R/tolerance_a" "$R/tolerance_b" --max-ulps 0
expect_rc 0 D "$R/tolerance_a" "$R/tolerance_b" --rtol 1e-15
# NaN: bitwise identical to itself, never within tolerance.
expect_rc 0 D "$R/nan_loss" "$R/nan_loss"
expect_rc 1 D "$R/nan_loss" "$R/nan_loss" --rtol 1

# Bare step logs.
expect_rc 1 D "$R/base/steps.jsonl" "$R/computation/steps.jsonl"
grep -q 'runs part at step 4 (computation)' "$T/out" || fail "bare logs"

# Errors: exit 2 and one line naming the file and position.
expect_error 'future_format/manifest.json: format reprun.run/9 is newer than this reprun reads' D "$R/base" "$R/future_format"
expect_error 'garbage_line/steps.jsonl:4: not valid JSON' D "$R/base" "$R/garbage_line"
expect_error 'decreasing_steps/steps.jsonl:5: step 2 after step 3 \(duplicate or decreasing step\)' D "$R/base" "$R/decreasing_steps"
expect_error 'corrupt_manifest/manifest.json: corrupt manifest' D "$R/base" "$R/corrupt_manifest"
expect_error 'nope: no such file or directory' D "$R/base" "$T/nope"
expect_error 'not a run directory \(no manifest.json\)' D "$R/base" "$T"
expect_error "unknown report format.*did you mean 'json'" D "$R/base" "$R/same" --format jsn

# Report formats parse back.
expect_rc 1 D "$R/base" "$R/computation" --format json
PY=$(command -v python3)
"$PY" - "$T/out" <<'PYEOF' || fail "JSON report does not carry the documented keys"
import json, sys
r = json.load(open(sys.argv[1]))
for k in ["format", "kind", "identical", "verdict", "mode", "a", "b", "metadata", "dataset", "divergence", "growth", "final", "notes"]:
    assert k in r, k
assert r["format"] == "reprun.report/1" and r["identical"] is False
d = r["divergence"]
assert d["step"] == 4 and d["classification"] == "computation" and d["trace_phase"] == "backward", d
assert d["trace_entry"] == "dense_2.weight.grad" and d["loss_differs_from"] == 5
assert r["growth"][-1]["end"] is True
PYEOF
expect_rc 1 D "$R/base" "$R/meta_changed" --format junit -o "$T/r.xml"
"$PY" -c "import xml.etree.ElementTree as E,sys; t=E.parse(sys.argv[1]).getroot(); assert t.tag=='testsuites' and t.get('failures')=='1', t.attrib" "$T/r.xml" ||
  fail "JUnit XML not well-formed"
expect_rc 1 D "$R/base" "$R/computation" --format markdown
grep -q '^### reprun diff ❌ DIFFERENT: runs part at step 4 (computation)' "$T/out" || fail "markdown heading"
expect_rc 1 D "$R/base" "$R/computation" --format html -o "$T/r.html"
grep -q '<svg id="loss-plot"' "$T/r.html" || fail "html has no plot"
grep -q 'id="divergence-marker"' "$T/r.html" || fail "html plot does not mark the divergence"
grep -qiE '<script|https?://' "$T/r.html" && fail "html is not self-contained"
pass
