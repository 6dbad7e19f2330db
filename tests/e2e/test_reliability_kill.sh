# SIGKILL at random moments (24 trials): the run directory is always readable by reprun diff (a
# valid prefix, status not complete), and --resume then finishes bitwise identical to an
# uninterrupted run.
source "$(dirname "$0")/lib.sh"
cat >"$T/c.json" <<'JSON'
{"seed": 9, "data": {"kind": "synthetic", "samples": 3000, "features": 64, "classes": 5},
 "model": {"hidden": [128, 128], "dropout": 0.1},
 "training": {"batch_size": 32, "epochs": 3, "checkpoint_every": 7, "eval_every": 25},
 "determinism": {"threads": 2}}
JSON
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/full" -q
total=$(json_get "$T/full/summary.json" total_steps)
# Each trial kills the run at a random moment. The moment is chosen by progress, not by the
# clock, so a slow machine (a sanitizer build, a loaded CI runner) spreads the kills over the run
# as a fast one does: trials 1-4 kill after a random sub-millisecond-to-5 ms delay (often before
# or while the run directory is made), the others as soon as the step log holds a random number of
# records (the kill lands between two of the trainer's writes or in the middle of one).
RANDOM=12345 # the trial moments are random but the same in every test run
killed_mid=0
for trial in $(seq 1 24); do
  d="$T/k$trial"
  target=$((RANDOM % total))
  early_us=$((RANDOM % 5000))
  "$REPRUN" train "$T/c.json" -o "$d" -q &
  pid=$!
  if ((trial <= 4)); then
    sleep "$(printf '0.%06d' "$early_us")"
  else
    while kill -0 "$pid" 2>/dev/null; do
      lines=0
      [[ -f $d/steps.jsonl ]] && lines=$(wc -l <"$d/steps.jsonl")
      ((lines >= target)) && break
      sleep 0.002
    done
  fi
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if [[ ! -f "$d/manifest.json" ]]; then
    # Killed before anything that looks like a run was written: nothing to read or resume.
    [[ ! -f "$d/summary.json" ]] || fail "trial $trial: a summary without a manifest"
    continue
  fi
  # A run killed early may have no summary yet: then its status is empty.
  status=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("status", ""))' "$d/summary.json" 2>/dev/null)
  run_rc "$REPRUN" diff "$T/full" "$d" --ignore-meta config_file
  [[ $RC == 0 || $RC == 1 ]] || fail "trial $trial: diff could not read the killed run (exit $RC): $(cat "$T/err")"
  if [[ $status != complete ]]; then
    killed_mid=$((killed_mid + 1))
    grep -qE 'identical|run ended early' "$T/out" || fail "trial $trial: killed run is not a prefix: $(head -3 "$T/out")"
  fi
  expect_rc 0 "$REPRUN" train --resume "$d" -q
  cmp -s "$T/full/steps.jsonl" "$d/steps.jsonl" || fail "trial $trial: resumed run differs from the uninterrupted one"
  cmp -s "$T/full/evals.jsonl" "$d/evals.jsonl" || fail "trial $trial: resumed evals differ"
done
[[ $killed_mid -ge 10 ]] || fail "only $killed_mid of 24 trials killed the run in the middle (of $total steps)"
echo "killed mid-run in $killed_mid of 24 trials"
pass
