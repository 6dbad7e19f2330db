# reprun exec's messages: a program without a step log is said to be compared by its outputs (exit
# code, stdout, artifacts), never as "0 step records identical", in every report format and in
# `reprun diff` of its runs; a failed program shows the end of its stderr even under -q. Runs whose
# step records agree but whose stdout differs name the first differing line, without advising a
# step log they have; a PASS says which pins it held with, and that --no-pin shows what they hide
# (issue 42 item 7).
source "$(dirname "$0")/lib.sh"

# --- No step log, identical runs: every format says what was compared.
cat >"$T/outputs.sh" <<'SH'
#!/bin/sh
echo "model trained"
echo weights >a.bin
echo predictions >b.csv
SH
chmod +x "$T/outputs.sh"
want='IDENTICAL: no step log; outputs compared: exit code, stdout, 2 artifacts identical, metadata matches'
expect_rc 0 "$REPRUN" exec -o "$T/same" -q --artifact a.bin --artifact b.csv \
  --markdown "$T/same.md" --junit "$T/same.xml" --html "$T/same.html" -- "$T/outputs.sh"
grep -qF "run-2 vs run-1: $want" "$T/out" || fail "text pair verdict: $(cat "$T/out")"
grep -qF 'PASS: 2 runs of the program identical (no step log; compared exit code, stdout and 2 artifacts)' "$T/out" ||
  fail "text verdict: $(head -1 "$T/out")"
for f in "$T/out" "$T/same.md" "$T/same.xml" "$T/same.html"; do
  grep -qF "no step log; outputs compared: exit code, stdout, 2 artifacts identical" "$f" || fail "$f: verdict missing"
  ! grep -qE '0 step records|step records (bitwise )?identical' "$f" || fail "$f: speaks of step records: $(grep -E 'step records' "$f")"
done
expect_rc 0 "$REPRUN" exec -o "$T/samej" -q --format json -- sh -c 'echo same'
v=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pairs"][0]["diff"]["verdict"])' "$T/out") ||
  fail "json report: $(cat "$T/out")"
[[ $v == 'IDENTICAL: no step log; outputs compared: exit code, stdout identical, metadata matches' ]] ||
  fail "json pair verdict: $v"
# reprun diff of two such runs says the same.
expect_rc 0 "$REPRUN" diff "$T/same/run-1" "$T/same/run-2"
grep -qF "$want" "$T/out" || fail "diff verdict: $(head -1 "$T/out")"

# --- No step log, different stdout: the verdict names what differs, not "step records identical".
expect_rc 1 "$REPRUN" exec -o "$T/differ" -q --artifact a.bin -- sh -c 'echo "noise $$"; echo w >a.bin'
grep -qF 'run-2: DIFFERENT: no step log; outputs compared: exit code, stdout, 1 artifact; differing: stdout; 1 metadata field differs' "$T/out" ||
  fail "different verdict: $(head -3 "$T/out")"
! grep -q 'step records identical' "$T/out" || fail "speaks of step records: $(grep 'step records' "$T/out")"

# --- A program with a step log keeps the step-record verdict.
cat >"$T/steps.sh" <<'SH'
#!/bin/sh
echo '{"step":1,"loss":0.5}' >>"$REPRUN_STEP_LOG"
echo '{"step":2,"loss":0.25}' >>"$REPRUN_STEP_LOG"
SH
chmod +x "$T/steps.sh"
expect_rc 0 "$REPRUN" exec -o "$T/steps" -q -- "$T/steps.sh"
grep -qF 'run-2 vs run-1: IDENTICAL: 2 step records bitwise identical, metadata matches' "$T/out" ||
  fail "step-log verdict: $(cat "$T/out")"

# --- A failing program: the end of its stderr, under -q too, then the one error line.
cat >"$T/crash.sh" <<'SH'
#!/bin/sh
i=1
while [ $i -le 30 ]; do echo "trace line $i" >&2; i=$((i + 1)); done
echo "RuntimeError: CUDA out of memory" >&2
exit 3
SH
chmod +x "$T/crash.sh"
expect_rc 2 "$REPRUN" exec -o "$T/crash" -q -- "$T/crash.sh"
grep -qF "run-1 failed (exit status 3); the last lines of $T/crash/run-1/stderr.txt:" "$T/err" ||
  fail "no header naming the run: $(cat "$T/err")"
grep -qF '  | RuntimeError: CUDA out of memory' "$T/err" || fail "last stderr line not shown: $(cat "$T/err")"
grep -qF '  | trace line 12' "$T/err" || fail "tail too short: $(cat "$T/err")"
! grep -qF '  | trace line 11' "$T/err" || fail "more than 20 lines shown: $(cat "$T/err")"
[[ $(grep -c '^reprun: error: ' "$T/err") == 1 ]] || fail "expected one error line: $(cat "$T/err")"
tail -1 "$T/err" | grep -q '^reprun: error: run-1: the program failed (exit status 3)' ||
  fail "error line not last: $(cat "$T/err")"
# Killed: the header says so; a program that wrote only to stdout shows its stdout.
expect_rc 2 "$REPRUN" exec -o "$T/killed" -q -- sh -c 'echo "epoch 3 of 10"; kill -9 $$'
grep -qF 'run-1 failed (killed by signal 9 (Killed)); the last lines of' "$T/err" || fail "killed header: $(cat "$T/err")"
grep -qF '  | epoch 3 of 10' "$T/err" || fail "stdout fallback not shown: $(cat "$T/err")"
expect_rc 2 "$REPRUN" exec -o "$T/silent" -q -- sh -c 'exit 4'
grep -qF 'run-1 failed (exit status 4); it wrote nothing to stderr or stdout' "$T/err" || fail "silent: $(cat "$T/err")"
# --- The step records agree, stdout does not (a validation subset drawn unseeded): the line is
# named, and the cause does not ask for the step log the program writes.
cat >"$T/subset.sh" <<'SH'
#!/bin/sh
for s in 1 2 3; do
  echo "{\"step\":$s,\"loss\":0.$s}" >>"$REPRUN_STEP_LOG"
  echo "step $s loss 0.$s"
done
echo "validation subset $(od -An -N8 -tu8 /dev/urandom | tr -d ' ')"
echo done
SH
chmod +x "$T/subset.sh"
expect_rc 1 "$REPRUN" exec -o "$T/subset" -q -- "$T/subset.sh"
grep -q '^  stdout differs first at line 4: A `validation subset [0-9]*`, B `validation subset [0-9]*`$' "$T/out" ||
  fail "the differing stdout line is not named: $(cat "$T/out")"
grep -q "^  1. the program's outputs differ though its 3 step records and everything recorded about its inputs agree: something it prints or writes is not seeded (stdout, line 4" "$T/out" ||
  fail "stdout cause: $(cat "$T/out")"
grep -q "write a step log" "$T/out" && fail "a step log advised to a program that writes one: $(cat "$T/out")"

# --- A PASS held with the pins says so: this script orders a set of strings, which PYTHONHASHSEED
# (pinned to 0) fixes; launched normally (--no-pin) it is not reproducible.
cat >"$T/setorder.py" <<'PY'
import json, os
words = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}
with open(os.environ["REPRUN_STEP_LOG"], "a") as log:
    for step, w in enumerate(words, 1):
        log.write(json.dumps({"step": step, "loss": len(w) / 10}) + "\n")
PY
env -u PYTHONHASHSEED "$REPRUN" exec -q -- python3 "$T/setorder.py" >"$T/out" 2>"$T/err"
[[ $? == 0 ]] || fail "pinned: $(cat "$T/out") $(cat "$T/err")"
grep -q '^PASS: 2 runs of the program identical, with PYTHONHASHSEED=0 pinned$' "$T/out" || fail "pinned: $(head -1 "$T/out")"
grep -q '^  note: the pins (PYTHONHASHSEED=0) hide what a normal launch of the program varies, such as the order of a set of strings: reprun exec --no-pin runs it as it is launched normally$' "$T/out" ||
  fail "pinned: no --no-pin hint: $(cat "$T/out")"
env -u PYTHONHASHSEED "$REPRUN" exec -q --no-pin --runs 3 -- python3 "$T/setorder.py" >"$T/out" 2>"$T/err"
[[ $? == 1 ]] || fail "--no-pin: the set's order did not differ: $(head -3 "$T/out") $(cat "$T/err")"
pass
