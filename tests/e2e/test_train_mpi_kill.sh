# A rank that dies (SIGKILL) during an MPI run: mpirun ends the job, `reprun train --ranks`
# exits 2 naming the rank, the run's summary says failed with the rank, its checkpoints are
# intact, and a resume (on another rank count) gives the single-process bits. A bare mpirun run
# whose rank dies leaves a failed status too. A SIGTERM to `reprun train --ranks` (a scheduler's,
# or a search's) reaches the ranks through mpirun: they stop after the same step, exit 130 with
# the status "interrupted" and a checkpoint, and one summary is printed. Skips (125) without MPI.
source "$(dirname "$0")/lib.sh"
[[ ${REPRUN_WITH_MPI:-} == ON ]] || skip "this build has no MPI (cmake -DREPRUN_MPI=ON with libopenmpi-dev)"
command -v mpirun >/dev/null || skip "no mpirun (apt-get install openmpi-bin)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
small_config "$T/c.json" '"determinism": {"threads": 1}'
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/one" -q
expect_rc 2 "$REPRUN" train "$T/c.json" -o "$T/k" --ranks 2 -q --kill-after-step 13 --kill-rank 1
grep -q "^reprun: error: .*rank 1 (killed by signal 9" "$T/err" || fail "the error does not name rank 1: $(cat "$T/err")"
grep -q "mpirun noticed that process rank 1 .* on signal 9" "$T/err" || fail "mpirun's own line on the dead rank is hidden: $(cat "$T/err")"
status=$(json_get "$T/k/summary.json" status)
[[ $status == "failed: rank 1 (killed by signal 9"* ]] || fail "summary status: $status"
[[ -e $T/k/checkpoints/step-000000010.ckpt ]] || fail "checkpoint of step 10 missing: $(ls "$T/k/checkpoints")"
expect_rc 0 "$REPRUN" train --resume "$T/k" --ranks 3 -q
cmp -s "$T/one/steps.jsonl" "$T/k/steps.jsonl" || fail "resumed after a dead rank: steps.jsonl differs"
# SIGTERM to the --ranks process alone, once the run is under way (steps of a few milliseconds:
# 600 epochs of the small model took 0.4 s, and the signal could land after the last step).
json_edit "$T/c.json" training.epochs:delete training.steps+=600 training.checkpoint_every=100000 \
  data.features=256 "model.hidden=[512, 512]"
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/long1" -q
"$REPRUN" train "$T/c.json" -o "$T/t" --ranks 2 >"$T/t.out" 2>"$T/t.err" &
pid=$!
wait_for_steps "$T/t" 30
kill -TERM $pid
wait $pid
expect_interrupted $? "$T/t" "SIGTERM to train --ranks 2 ($(tail -3 "$T/t.err"))"
[[ $(grep -c '^run: ' "$T/t.out") == 1 ]] || fail "expected one summary, got: $(cat "$T/t.out")"
# The stop reaches the ranks as SIGUSR1, which mpirun forwards at once: its SIGTERM would abort the
# job, signalling the ranks a second later and killing them a second after that, and this run of
# about a second then ended complete (exit 0) 3 times in 4. mpirun's own notices about the job's
# end are not shown.
grep -qE "Primary job|Forwarding signal|exited with non-zero status" "$T/t.err" && fail "mpirun's notices shown: $(cat "$T/t.err")"
expect_rc 0 "$REPRUN" train --resume "$T/t" --ranks 1 -q
cmp -s "$T/long1/steps.jsonl" "$T/t/steps.jsonl" || fail "interrupted on 2 ranks, resumed on 1: steps.jsonl differs"
# A bare mpirun: rank 0 sees the job stopped and records a failed status itself.
run_rc mpirun -np 2 --oversubscribe "$REPRUN" train "$T/c.json" -o "$T/bare" -q --kill-after-step 13 --kill-rank 1
[[ $RC != 0 ]] || fail "mpirun with a dead rank exited 0"
status=$(json_get "$T/bare/summary.json" status)
[[ $status == failed:* ]] || fail "bare mpirun, dead rank: summary status is '$status'"
pass
