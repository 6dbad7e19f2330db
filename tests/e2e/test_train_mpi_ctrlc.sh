# Ctrl-C at a terminal on `reprun train --ranks 2`: the terminal sends SIGINT to its whole
# foreground process group. reprun passes the stop on to mpirun as one SIGTERM; mpirun must not
# also get the terminal's SIGINT, since Open MPI takes a second signal as "abort now" and kills the
# ranks mid-step (the run was left "running", exit 1, no message, no checkpoint). Here the ranks
# stop as one process does: checkpoint, status interrupted, exit 130, and --resume gives the
# single-process bits. setsid gives the command a process group of its own, as a shell gives a
# job. Skips (125) without MPI.
source "$(dirname "$0")/lib.sh"
[[ ${REPRUN_WITH_MPI:-} == ON ]] || skip "this build has no MPI (cmake -DREPRUN_MPI=ON with libopenmpi-dev)"
command -v mpirun >/dev/null || skip "no mpirun (apt-get install openmpi-bin)"
command -v setsid >/dev/null || skip "no setsid (util-linux)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Steps of a few milliseconds, so that the run is well under way, not over, when the signal lands.
cat >"$T/c.json" <<'JSON'
{"seed": 3, "data": {"kind": "synthetic", "samples": 6000, "features": 256, "classes": 4},
 "model": {"hidden": [512, 512]},
 "training": {"batch_size": 64, "steps": 600, "checkpoint_every": 100000},
 "determinism": {"threads": 1}}
JSON
setsid "$REPRUN" train "$T/c.json" -o "$T/t" --ranks 2 >"$T/t.out" 2>"$T/t.err" &
pid=$!
wait_for_steps "$T/t" 30
pgid=$(ps -o pgid= -p $pid | tr -d ' ')
[[ $pgid == "$pid" ]] || fail "setsid did not give reprun a process group of its own ($pgid)"
kill -INT -- -"$pgid" # what Ctrl-C does
wait $pid
expect_interrupted $? "$T/t" "Ctrl-C on train --ranks 2 ($(tail -3 "$T/t.err"))"
expect_rc 0 "$REPRUN" train --resume "$T/t" --ranks 2 -q
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/one" -q
cmp -s "$T/one/steps.jsonl" "$T/t/steps.jsonl" || fail "interrupted by Ctrl-C and resumed: steps.jsonl differs"
pass
