# A check whose variation did not happen fails (issue 12, item 4), and check never names a work
# folder it deleted (item 10): --keep keeps a temporary one.
source "$(dirname "$0")/lib.sh"
small_config "$T/c.json"
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/plain" -q
last=$(json_get "$T/plain/summary.json" total_steps)

# A resume step at or past the run's last step: exit 2, the reason named, before run 2 trains.
for n in "$last" $((last + 50)); do
  expect_error "--vary resume=$n: step $n is at or past the run's last step \($last\).*give a step from 1 to $((last - 1))" \
    "$REPRUN" check "$T/c.json" -o "$T/w$n" --vary resume=$n -q
  [[ ! -e $T/w$n/run-2 ]] || fail "run-2 was trained although the variation could not happen"
done
# One step before the end is a real resume, and passes.
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/ok" --vary resume=$((last - 1)) -q
grep -q "killed after step $((last - 1)) and resumed from step $(((last - 1) / 10 * 10)) -> complete" "$T/out" ||
  fail "resume: $(cat "$T/out")"

# More threads than the machine has cores is a valid variation; more than reprun allows is not.
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/many" --vary threads=1,$(($(nproc) * 4)) -q
expect_error "--vary threads=1,2000: 2000 threads: at most 1024" "$REPRUN" check "$T/c.json" --vary threads=1,2000 -q
# A varied value that train would refuse is refused before run 1 trains, naming the value.
bs=$(json_get "$T/c.json" training.batch_size)
expect_error "--vary accumulation=$((bs * 2)) \(run-2\): .*training.accumulation: must not exceed training.batch_size" \
  "$REPRUN" check "$T/c.json" -o "$T/badacc" --vary accumulation=1,$((bs * 2)) -q
[[ -e $T/badacc ]] && fail "check trained run 1 before refusing accumulation=$((bs * 2))"

# Threads the system cannot create: exit 2 with the reason, for train and for check (not a crash).
# The limit on address space leaves no room for 1024 thread stacks; a sanitizer build reserves
# far more address space than any limit allows, so that part runs only on a normal build.
if ! ldd "$REPRUN" 2>/dev/null | grep -q 'lib[at]san'; then
  (ulimit -v 1500000 && "$REPRUN" train "$T/c.json" -o "$T/t1024" --threads 1024 -q) >"$T/out" 2>"$T/err"
  [[ $? == 2 ]] || fail "train with threads it cannot create: expected exit 2: $(cat "$T/err")"
  grep -q '^reprun: error: determinism.threads: cannot start 1024 threads (the system allowed [0-9]*)' "$T/err" ||
    fail "threads error: $(cat "$T/err")"
  [[ ! -e $T/t1024 ]] || fail "a run that could not start its threads left a directory"
  (ulimit -v 1500000 && "$REPRUN" check "$T/c.json" -o "$T/wt" --vary threads=1,1024 -q) >"$T/out" 2>"$T/err"
  [[ $? == 2 ]] || fail "check with threads that cannot be created: expected exit 2: $(cat "$T/err")"
  grep -q 'run-2: training failed (exit 2): .*cannot start 1024 threads' "$T/err" || fail "check threads: $(cat "$T/err")"
fi

# The work folder: a temporary one that is removed is not named as if it were there.
expect_rc 0 env TMPDIR="$T/tmp" bash -c 'mkdir -p "$TMPDIR" && exec "$0" check "$1" -q' "$REPRUN" "$T/c.json"
grep -q '^  work dir: removed (temporary, all runs agreed; --keep keeps it)' "$T/out" || fail "removed work dir: $(cat "$T/out")"
[[ -z $(ls "$T/tmp") ]] || fail "temporary work dir not removed"
expect_rc 0 env TMPDIR="$T/tmp" bash -c 'exec "$0" check "$1" -q --keep --format json' "$REPRUN" "$T/c.json"
kept=$(json_get "$T/out" work_dir)
[[ -d $kept/run-2 && $kept == "$T/tmp/"* ]] || fail "--keep: work dir $kept not kept"
pass
