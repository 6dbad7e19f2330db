# reprun exec with programs that crash, are killed, write garbage, are missing or not executable;
# and the fallbacks: --loss-regex, and stdout/artifacts when there is no step log.
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
pass
