# reprun exec with programs that crash, are killed, write garbage, are missing or not executable;
# and the fallbacks: --loss-regex, and stdout/artifacts when there is no step log. A mistyped exec
# option is refused, never run as the program, and a run that fails after others completed still
# gets its report (issue 42 items 5, 6).
source "$(dirname "$0")/lib.sh"
expect_error 'nosuchprogram: not found in PATH' "$REPRUN" exec -q -- nosuchprogram
printf '#!/bin/sh\necho hi\n' >"$T/noexec.sh"
expect_error 'noexec.sh: not executable' "$REPRUN" exec -q -- "$T/noexec.sh"
expect_error "exec: give the program|command is required" "$REPRUN" exec -q
# A failed run shows the end of its stderr (even under -q), then the one error line.
expect_rc 2 "$REPRUN" exec -o "$T/crash" -q -- sh -c 'echo boom >&2; exit 3'
grep -q '^  | boom$' "$T/err" || fail "stderr tail not shown: $(cat "$T/err")"
tail -1 "$T/err" | grep -q '^reprun: error: run-1: the program failed (exit status 3)' || fail "crash: $(cat "$T/err")"
grep -q '"status": "failed: exit status 3"' "$T/crash/run-1/summary.json" || fail "failure not recorded"
grep -q boom "$T/crash/run-1/stderr.txt" || fail "stderr not saved"
expect_rc 2 "$REPRUN" exec -o "$T/killed" -q -- sh -c 'kill -9 $$'
tail -1 "$T/err" | grep -q '^reprun: error: run-1: the program failed (killed by signal 9' || fail "killed: $(cat "$T/err")"
# A garbage line: exit 2 naming the file and line; the valid prefix is kept.
cat >"$T/garbage.sh" <<'SH'
#!/bin/sh
echo '{"step":1,"loss":0.5}' >>"$REPRUN_STEP_LOG"
echo '{"step":2,"loss":0.4}' >>"$REPRUN_STEP_LOG"
echo 'loss is going down' >>"$REPRUN_STEP_LOG"
echo '{"step":4,"loss":0.3}' >>"$REPRUN_STEP_LOG"
SH
chmod +x "$T/garbage.sh"
expect_error 'run-1/steps.jsonl:3: not valid JSON .*\(the valid prefix is kept\)' "$REPRUN" exec -o "$T/garbage" -q -- "$T/garbage.sh"
[[ $(wc -l <"$T/garbage/run-1/steps.jsonl") == 2 ]] || fail "valid prefix not kept"
cat >"$T/dup.sh" <<'SH'
#!/bin/sh
echo '{"step":1,"loss":0.5}' >>"$REPRUN_STEP_LOG"
echo '{"step":1,"loss":0.4}' >>"$REPRUN_STEP_LOG"
SH
chmod +x "$T/dup.sh"
expect_error 'steps.jsonl:2: step 1 after step 1 \(duplicate or decreasing step\)' "$REPRUN" exec -o "$T/dup" -q -- "$T/dup.sh"

# --loss-regex: losses from stdout; an unpinned random term makes run 2 part at step 3.
cat >"$T/noisy.sh" <<'SH'
#!/bin/bash
for i in 1 2 3 4 5; do
  if [[ $i -ge 3 && -z ${STABLE:-} ]]; then echo "step $i loss=0.$RANDOM$RANDOM"; else echo "step $i loss=0.$((9 - i))"; fi
done
SH
chmod +x "$T/noisy.sh"
expect_rc 1 "$REPRUN" exec -o "$T/regex" -q --loss-regex 'step ([0-9]+) loss=([0-9.]+)' -- "$T/noisy.sh"
grep -q 'runs part at step 3 (computation)' "$T/out" || fail "loss regex: $(head -1 "$T/out")"
grep -q '"step_log": "loss-regex"' "$T/regex/run-1/manifest.json" || fail "step log source"
expect_rc 0 "$REPRUN" exec -o "$T/regex2" -q --pin STABLE=1 --loss-regex 'loss=([0-9.]+)' -- "$T/noisy.sh"
expect_error "--loss-regex \(: invalid regular expression" "$REPRUN" exec -q --loss-regex '(' -- true

# No step log: stdout and artifacts are compared, and the report says it cannot localize.
cat >"$T/artifact.sh" <<'SH'
#!/bin/bash
echo "model trained"
echo "weights $RANDOM" >model.bin
SH
chmod +x "$T/artifact.sh"
expect_rc 1 "$REPRUN" exec -o "$T/art" -q --artifact model.bin -- "$T/artifact.sh"
grep -q '\[outputs\] outputs.artifacts' "$T/out" || fail "artifact difference not named: $(cat "$T/out")"
grep -q 'cannot be localized by step' "$T/out" || fail "no-step-log note missing"
[[ -f "$T/art/run-2/artifacts/model.bin" ]] || fail "artifact not kept per run"
expect_rc 0 "$REPRUN" exec -o "$T/plain" -q -- sh -c 'echo same'
grep -q 'identical (no step log; compared exit code and stdout)' "$T/out" || fail "plain verdict: $(head -1 "$T/out")"
# A mistyped exec option before the program (or before "--") is an unknown option with the one it
# likely meant, never the program to run (it was "--run: not found in PATH").
expect_error "^reprun: error: --run: unknown option of reprun exec \(did you mean '--runs'\?\); the program and its arguments go after --" \
  "$REPRUN" exec --run 3 -- sh -c 'exit 0'
expect_error "^reprun: error: --nolocalize: unknown option of reprun exec \(did you mean '--no-localize'\?\)" \
  "$REPRUN" exec --nolocalize -- sh -c 'exit 0'
expect_error "^reprun: error: --nolocalize: unknown option of reprun exec \(did you mean '--no-localize'\?\)" \
  "$REPRUN" exec --nolocalize sh -c 'exit 0'
expect_error "^reprun: error: --time-limit 2x: expected a duration such as 90, 90s, 20m or 2h" \
  "$REPRUN" exec --time-limit 2x -- sh -c 'exit 0'
expect_error "^reprun: error: --time-limit 10000000000h: too large: at most 1000000000s \(about 31 years\)$" \
  "$REPRUN" exec --time-limit 10000000000h -- sh -c 'exit 0'

# Only run-2 crashes, after 2 logged steps: the report still compares it with run-1 up to its
# failure and shows the failure (there was nothing on stdout), and the exec exits 2.
cat >"$T/crash2.sh" <<'SH'
#!/bin/sh
for s in 1 2 3 4; do
  if [ "$s" = 3 ] && [ "$BUG" = crash ]; then echo "planted crash" >&2; exit 3; fi
  echo "{\"step\":$s,\"loss\":0.5}" >>"$REPRUN_STEP_LOG"
done
SH
chmod +x "$T/crash2.sh"
expect_rc 2 "$REPRUN" exec -o "$T/partial" -q --runs 3 --vary env:BUG=,crash --markdown "$T/partial.md" -- "$T/crash2.sh"
grep -q "^ERROR: run-2 failed (exit status 3) after step 2; up to its failure its 2 step records are identical to run-1's$" "$T/out" ||
  fail "failing run: verdict: $(cat "$T/out")"
grep -q "^  run-2: BUG=crash -> failed: exit status 3$" "$T/out" || fail "failing run: $(cat "$T/out")"
grep -q "^  run-2 failed (exit status 3); the last lines of $T/partial/run-2/stderr.txt:$" "$T/out" ||
  fail "failing run: no failure block: $(cat "$T/out")"
grep -q "^    | planted crash$" "$T/out" || fail "failing run: stderr tail: $(cat "$T/out")"
grep -q "^  note: run-2 failed, so run-3 was not started$" "$T/out" || fail "failing run: $(cat "$T/out")"
grep -q "^== run-2 against run-1$" "$T/out" || fail "failing run: no comparison: $(cat "$T/out")"
grep -q "^DIFFERENT: run ended early (B stops after 2 records, A has 4)" "$T/out" || fail "failing run: $(cat "$T/out")"
tail -1 "$T/err" | grep -q "^reprun: error: run-2: the program failed (exit status 3)" || fail "failing run: $(cat "$T/err")"
grep -q "ERROR: run-2 failed (exit status 3) after step 2" "$T/partial.md" || fail "failing run: markdown: $(cat "$T/partial.md")"
[[ ! -e $T/partial/run-3 ]] || fail "failing run: run-3 was started"
expect_rc 2 "$REPRUN" exec -o "$T/partial-json" -q --vary env:BUG=,crash --format json -- "$T/crash2.sh"
python3 - "$T/out" <<'PY' || fail "failing run: JSON: $(cat "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["verdict"].startswith("ERROR: run-2 failed (exit status 3) after step 2"), r["verdict"]
assert r["error"].startswith("run-2: the program failed (exit status 3)"), r["error"]
assert "planted crash" in r["failure"], r["failure"]
assert r["pairs"][0]["diff"]["steps_compared"] == 2, r["pairs"][0]["diff"]
PY
pass
