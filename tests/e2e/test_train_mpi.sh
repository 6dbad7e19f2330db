# Data parallelism over MPI ranks (docs/scaling.md): steps.jsonl and evals.jsonl byte-identical to
# the single-process run for 1, 2, 3 and 4 ranks, with Adam, dropout and accumulation, launched by
# --ranks and by a bare mpirun; a run stopped on 4 ranks resumes on 2 and on 1, bitwise; more ranks
# than rows is refused in one line. One thread per rank, oversubscribed on CI's 2 cores. Skips
# (125) in a build without MPI (the asan tree) or without mpirun.
source "$(dirname "$0")/lib.sh"
[[ ${REPRUN_WITH_MPI:-} == ON ]] || skip "this build has no MPI (cmake -DREPRUN_MPI=ON with libopenmpi-dev)"
command -v mpirun >/dev/null || skip "no mpirun (apt-get install openmpi-bin)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # CI may run as root
small_config "$T/c.json" '"optimizer": {"name": "adam", "lr": 0.01}' \
  '"determinism": {"threads": 1}'
json_edit "$T/c.json" model.dropout+=0.2 training.accumulation+=2 training.epochs=3
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/one" -q
lines=$(wc -l <"$T/one/steps.jsonl")
[[ $lines == 52 ]] || fail "expected 52 lines (step 0 and 51 steps), got $lines"
same() { # same DIR WHAT: DIR's logs are the single-process run's, byte for byte
  cmp -s "$T/one/steps.jsonl" "$1/steps.jsonl" || fail "$2: steps.jsonl differs from the single-process run"
  cmp -s "$T/one/evals.jsonl" "$1/evals.jsonl" || fail "$2: evals.jsonl differs from the single-process run"
}
for p in 1 2 3 4; do
  expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/r$p" --ranks $p -q
  same "$T/r$p" "--ranks $p"
  [[ $(json_get "$T/r$p/manifest.json" config.determinism.ranks) == "$p" ]] || fail "manifest of $p ranks records $(json_get "$T/r$p/manifest.json" config.determinism.ranks)"
done
json_get "$T/r2/manifest.json" reprun.kernels.mpi | grep -q "Open MPI" || fail "manifest names no MPI library"
# A bare mpirun, as a user or Slurm's srun starts it.
expect_rc 0 mpirun -np 3 --oversubscribe "$REPRUN" train "$T/c.json" -o "$T/bare" -q
same "$T/bare" "mpirun -np 3"
[[ $(json_get "$T/bare/manifest.json" config.determinism.ranks) == 3 ]] || fail "mpirun -np 3 not recorded"
# Ranks are an execution setting: diff says identical, and lists them as not counted.
expect_rc 0 "$REPRUN" diff "$T/one" "$T/r4"
grep -q "determinism.ranks" "$T/out" || fail "diff does not list determinism.ranks: $(cat "$T/out")"
# Stopped on 4 ranks, resumed on 2; stopped on 2 ranks, resumed on 1 (checkpoints every 10 steps).
# (--kill-after-step kills every rank, and --ranks then ends as a killed process does: 137.)
expect_rc 137 "$REPRUN" train "$T/c.json" -o "$T/k4" --ranks 4 -q --kill-after-step 23
expect_rc 0 "$REPRUN" train --resume "$T/k4" --ranks 2 -q
same "$T/k4" "4 ranks killed at step 23, resumed on 2"
expect_rc 137 "$REPRUN" train "$T/c.json" -o "$T/k2" --ranks 2 -q --kill-after-step 14
expect_rc 0 "$REPRUN" train --resume "$T/k2" --ranks 1 -q
same "$T/k2" "2 ranks killed at step 14, resumed on 1"
resumed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["resumes"][-1]["ranks"])' "$T/k2/manifest.json")
[[ $resumed == 1 ]] || fail "the resume on 1 rank is recorded as $resumed ranks"
# The gate: ranks are a dimension of check.
expect_rc 0 "$REPRUN" check "$T/c.json" --vary ranks=1,3
grep -q "^PASS: 2 runs bitwise identical" "$T/out" || fail "check --vary ranks=1,3: $(head -3 "$T/out")"
grep -q "run-2: ranks=3 -> complete" "$T/out" || fail "check does not name the ranks: $(cat "$T/out")"
# More ranks than the rows of a batch: one line, nothing launched, nothing written.
expect_error "determinism.ranks: 40 ranks but a batch of this run has only 28 rows" \
  "$REPRUN" train "$T/c.json" -o "$T/many" --ranks 40 -q
[[ ! -e $T/many ]] || fail "a refused run wrote its directory"
pass
