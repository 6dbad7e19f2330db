# reprun selftest: the gate catches each injected fault (bit flip, broken resume, atomic reduction)
# and passes the true runs; with one fault disarmed its control is MISSED and selftest exits 1, so
# this test (and the selftest) can fail; bad input is exit 2; the temporary folder goes away.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/tmp"
export TMPDIR="$T/tmp"

# All four lines, exit 0, nothing left in TMPDIR.
expect_rc 0 "$REPRUN" selftest
grep -qx 'caught  bit flip at step 7: diff names step 7, update, dense_2\.weight' "$T/out" ||
  fail "bit flip line: $(cat "$T/out")"
resume_re='^caught  broken resume \(optimizer state dropped\): check --vary resume=9 fails at step [0-9]+, '
resume_re+='the first step after the resume from step [0-9]+$'
line=$(grep -E "$resume_re" "$T/out") || fail "broken resume line: $(cat "$T/out")"
[[ $line =~ fails\ at\ step\ ([0-9]+),.*from\ step\ ([0-9]+)$ ]] || fail "broken resume line: $line"
at=${BASH_REMATCH[1]} from=${BASH_REMATCH[2]}
[[ $from -gt 0 && $at == $((from + 1)) ]] || fail "broken resume: step $at is not the one after $from"
grep -qE '^caught  atomic reduction with 2 threads: check fails at step [0-9]+, backward, layer dense_[0-9]+, .*gradient$' "$T/out" ||
  fail "atomic line: $(cat "$T/out")"
grep -qx 'pass    true runs: check, check --vary threads=1,2 and check --vary resume=9 are identical' "$T/out" ||
  fail "true runs line: $(cat "$T/out")"
[[ $(grep -c '^caught  \|^pass    ' "$T/out") == 4 ]] || fail "expected four caught/pass lines: $(cat "$T/out")"
[[ -z $(ls -A "$T/tmp") ]] || fail "selftest left its temporary folder: $(ls -A "$T/tmp")"

# The test can fail: each fault disarmed in turn is not caught, the others still are, exit 1.
for fault in flip resume atomic; do
  run_rc env REPRUN_SELFTEST_DISARM=$fault "$REPRUN" selftest -q
  [[ $RC == 1 ]] || fail "disarmed $fault: expected exit 1, got $RC: $(cat "$T/out" "$T/err")"
  [[ $(grep -c '^MISSED  ' "$T/out") == 1 && $(grep -c '^caught  ' "$T/out") == 2 ]] ||
    fail "disarmed $fault: expected one MISSED and two caught: $(cat "$T/out")"
  case $fault in
  flip) want='^MISSED  bit flip at step 7: diff finds no difference in the numbers$' ;;
  resume) want='^MISSED  broken resume .* passes$' ;;
  atomic) want='^MISSED  atomic reduction with 2 threads: check passes$' ;;
  esac
  grep -qE "$want" "$T/out" || fail "disarmed $fault: $(cat "$T/out")"
  grep -q '^pass    true runs' "$T/out" || fail "disarmed $fault: true runs: $(cat "$T/out")"
done
[[ -z $(ls -A "$T/tmp") ]] || fail "a failed selftest left its temporary folder"

# A fault in the caller's environment does not reach the clean runs; -o keeps the runs, and only
# the faulted ones say so in their manifests.
expect_rc 0 env REPRUN_SELFTEST_FAULT=drop-state "$REPRUN" selftest -q -o "$T/w"
[[ $(json_get "$T/w/flip/manifest.json" selftest_faults) == '["flip:7:dense_2.weight"]' ]] ||
  fail "flip run's manifest lacks the fault"
[[ $(json_get "$T/w/resume-broken/run-2/manifest.json" selftest_faults) == '["drop-state"]' ]] ||
  fail "resume run's manifest lacks the fault"
! grep -q selftest_fault "$T/w/base/manifest.json" "$T/w/true-1/run-1/manifest.json" || fail "a clean run records a fault"
expect_rc 1 "$REPRUN" diff "$T/w/base" "$T/w/flip"
grep -q 'selftest_faults: (absent) -> \["flip:7:dense_2.weight"\]' "$T/out" || fail "diff does not show the fault: $(cat "$T/out")"
# A resume with another fault adds it to the record; one without a fault keeps the record.
run_rc env REPRUN_SELFTEST_FAULT=flip:3:dense_1.weight "$REPRUN" train "$T/w/selftest.json" -o "$T/k" -q \
  --kill-after-step 6
[[ $RC == 137 ]] || fail "train --kill-after-step 6: exit $RC: $(cat "$T/err")"
run_rc env REPRUN_SELFTEST_FAULT=drop-state "$REPRUN" train --resume "$T/k" -q
[[ $RC == 0 ]] || fail "resume with drop-state: exit $RC: $(cat "$T/err")"
[[ $(json_get "$T/k/manifest.json" selftest_faults) == '["flip:3:dense_1.weight", "drop-state"]' ]] ||
  fail "faults of a resumed run: $(json_get "$T/k/manifest.json" selftest_faults)"

# --keep keeps the temporary folder and says where.
expect_rc 0 "$REPRUN" selftest --keep
kept=$(grep -m 1 '^reprun selftest: runs kept in ' "$T/err")
kept=${kept#reprun selftest: runs kept in }
[[ -n $kept && -d $kept/flip ]] || fail "--keep: $(cat "$T/err")"

# Bad input: exit 2, one error line.
expect_error 'nope.json: no such file' "$REPRUN" selftest "$T/nope.json"
printf '{"seed": 1, "optimizer": {"momentum": 0}}' >"$T/m0.json"
expect_error 'optimizer with state' "$REPRUN" selftest "$T/m0.json" -q
expect_error 'is not empty' "$REPRUN" selftest -o "$T/w" -q
# The trainer's hook refuses a fault it cannot apply, before creating anything.
expect_error "REPRUN_SELFTEST_FAULT: 'bogus': expected flip:STEP:TENSOR, drop-state or restart" \
  env REPRUN_SELFTEST_FAULT=bogus "$REPRUN" train "$T/w/selftest.json" -o "$T/f1" -q
expect_error "REPRUN_SELFTEST_FAULT: no tensor 'dense_9.weight'" \
  env REPRUN_SELFTEST_FAULT=flip:3:dense_9.weight "$REPRUN" train "$T/w/selftest.json" -o "$T/f2" -q
[[ ! -e $T/f1 && ! -e $T/f2 ]] || fail "a refused fault left a run directory"
pass
