# No process of a run outlives reprun, and a hang ends (issue 42 item 4, issue 40 item 4). A
# data-parallel job (two ranks over gloo, started by mp.spawn, so a launcher, two ranks and torch's
# resource tracker) whose rank 1 enters a dist.barrier() alone after step 2 hangs for good:
#  (a) --time-limit ends it: exit 2, the ranks still running and their last steps named, the
#      report on stdout;
#  (b) Ctrl-C (SIGINT to the process group, as a terminal sends it) and (c) SIGTERM to reprun alone
#      end it: exit 130, what was running said;
# after each, no process of the job is left (each carries a marker in its environment) and no
# temporary work directory either; with -o the interrupted run is kept, its status "interrupted".
#  (d) reprun check: Ctrl-C and SIGTERM to check alone stop its `reprun train` child too (it ran on
#      to "complete" after check exited 143): exit 130, no training left, the run interrupted.
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch (apt-get install python3-torch)"
"$PY" -c "import torch.distributed as d; assert d.is_available()" 2>/dev/null || skip "torch without distributed"
command -v setsid >/dev/null || skip "no setsid (util-linux)"
PORT=$("$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
MARK="reprun-e2e-$$-$RANDOM"
mkdir -p "$T/tmp"

cat >hang.py <<'PYSRC'
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, world):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ["PORT"], rank=rank, world_size=world)
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 6):
        loss = model(torch.randn(16, 8, generator=g)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 1 and step == 2:
            open(os.environ["HANG_FLAG"], "w").close()
            dist.barrier()  # rank 1 alone: it waits for good, and rank 0 in its next all-reduce
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.start_processes(worker, args=(2,), nprocs=2, start_method="spawn")
PYSRC

# The processes of the job: every one inherits the marker (--pin), which nothing else carries.
job_left() {
  local p
  for p in /proc/[0-9]*; do
    tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qx "MARK=$MARK" && echo "${p#/proc/} $(tr '\0' ' ' 2>/dev/null <"$p/cmdline")"
  done
}
expect_nothing_left() {
  sleep 0.5
  local left
  left=$(job_left)
  [[ -z $left ]] || fail "$1: processes of the job outlived reprun: $left"
  # reprun's work directories (reprun-exec.*, reprun-check.*); torch 2.x keeps a cache of its own
  # there (torchinductor_USER), which is the program's.
  [[ -z $(ls -A "$T/tmp" | grep '^reprun-') ]] || fail "$1: a temporary work directory was left: $(ls "$T/tmp")"
}
# The exit status of background job $1 (started with setsid: its process group is its pid), once it
# ends; one that still runs after 60 s fails the test, its group killed.
ended_rc() {
  for _ in $(seq 1200); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 "$1" 2>/dev/null; then
    kill -KILL -- "-$1" 2>/dev/null
    wait "$1"
    fail "$2: reprun did not end within 60 s of the signal: $(cat "$T/i.err")"
  fi
  wait "$1"
}
wait_for_file() {
  for _ in $(seq 1200); do
    [[ -e $1 ]] && return 0
    sleep 0.05
  done
  fail "$2: $1 never appeared: $(cat "$T/i.err")"
}
exec_args=(exec -q --pin "PORT=$PORT" --pin "MARK=$MARK" --pin "HANG_FLAG=$T/hanging")

# (a) the time limit.
TMPDIR="$T/tmp" run_rc "$REPRUN" "${exec_args[@]}" --time-limit 25 -- "$PY" hang.py
[[ $RC == 2 ]] || fail "(a) exit $RC: $(cat "$T/out") $(cat "$T/err")"
grep -q "^reprun: error: run-1: ran past the time limit (25s) and was ended with its process group; still running then: rank 0 (after step [0-9]*), rank 1 (after step 2)" "$T/err" ||
  fail "(a) the ranks still running and their last steps are not named: $(cat "$T/err")"
grep -q "^ERROR: run-1 ran past the time limit (25s) and was ended (its last step: [0-9]*); nothing to compare it with" "$T/out" ||
  fail "(a) no report on stdout: $(cat "$T/out")"
grep -q "^  work dir: removed (temporary, a run was ended at its time limit; --keep keeps it)" "$T/out" || fail "(a) $(cat "$T/out")"
expect_nothing_left "(a) the time limit"

# (b) Ctrl-C at a terminal: SIGINT to reprun's whole process group (setsid gives it one, as a shell
# gives a job); (c) SIGTERM to reprun alone, with -o: what was recorded is kept.
for how in INT TERM; do
  rm -f "$T/hanging"
  out=()
  [[ $how == TERM ]] && out=(-o "$T/kept")
  TMPDIR="$T/tmp" setsid "$REPRUN" "${exec_args[@]}" "${out[@]}" -- "$PY" hang.py >"$T/i.out" 2>"$T/i.err" &
  pid=$!
  wait_for_file "$T/hanging" "($how)"
  sleep 1
  if [[ $how == INT ]]; then kill -INT -- "-$pid"; else kill -TERM "$pid"; fi
  ended_rc $pid "($how)"
  rc=$?
  [[ $rc == 130 ]] || fail "($how) exit $rc, expected 130: $(cat "$T/i.err")"
  grep -q "^reprun: interrupted by SIG$how: run-1 was running (.*hang.py); it was ended with every process it started" "$T/i.err" ||
    fail "($how) not said what was interrupted: $(cat "$T/i.err")"
  expect_nothing_left "($how)"
done
grep -q "what was recorded is in $T/kept$" "$T/i.err" || fail "(TERM) $(cat "$T/i.err")"
[[ $(json_get "$T/kept/run-1/summary.json" status) == interrupted ]] || fail "(TERM) $(cat "$T/kept/run-1/summary.json")"

# (d) reprun check: a training long enough to be stopped in its middle.
cat >"$T/c.json" <<'JSON'
{"seed": 3, "data": {"kind": "synthetic", "samples": 6000, "features": 256, "classes": 4},
 "model": {"hidden": [512, 512]},
 "training": {"batch_size": 64, "steps": 100000, "checkpoint_every": 100000},
 "determinism": {"threads": 1}}
JSON
training_left() { pgrep -f "train $T/c.json" || true; }
for how in INT TERM; do
  rm -rf "$T/ck"
  TMPDIR="$T/tmp" setsid "$REPRUN" check "$T/c.json" -q -o "$T/ck" >"$T/i.out" 2>"$T/i.err" &
  pid=$!
  wait_for_steps "$T/ck/run-1" 20
  if [[ $how == INT ]]; then kill -INT -- "-$pid"; else kill -TERM "$pid"; fi
  ended_rc $pid "check ($how)"
  rc=$?
  [[ $rc == 130 ]] || fail "check ($how): exit $rc, expected 130: $(cat "$T/i.err")"
  grep -q "^reprun: interrupted by SIG$how: run-1 was running (reprun train): it stopped after step [0-9]* with status interrupted; what was recorded is in $T/ck$" "$T/i.err" ||
    fail "check ($how): $(cat "$T/i.err")"
  sleep 0.5
  [[ -z $(training_left) ]] || fail "check ($how): its training outlived it: $(ps -o pid,cmd -p "$(training_left)")"
  [[ $(json_get "$T/ck/run-1/summary.json" status) == interrupted ]] || fail "check ($how): $(cat "$T/ck/run-1/summary.json")"
done
# Without -o: the temporary work directory goes.
TMPDIR="$T/tmp" setsid "$REPRUN" check "$T/c.json" -q >"$T/i.out" 2>"$T/i.err" &
pid=$!
for _ in $(seq 400); do [[ -n $(training_left) ]] && break; sleep 0.05; done
sleep 2
kill -TERM "$pid"
ended_rc $pid "check without -o"
rc=$?
[[ $rc == 130 ]] || fail "check without -o: exit $rc: $(cat "$T/i.err")"
grep -q "the temporary work directory was removed (-o WORK_DIR or --keep keeps it)$" "$T/i.err" || fail "check without -o: $(cat "$T/i.err")"
sleep 0.5
[[ -z $(training_left) ]] || fail "check without -o: its training outlived it"
[[ -z $(ls -A "$T/tmp" | grep '^reprun-') ]] || fail "check without -o: a temporary work directory was left: $(ls "$T/tmp")"
pass
