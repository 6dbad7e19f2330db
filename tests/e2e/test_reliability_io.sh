# Disk full (a file-size limit): a clear error, the last good checkpoint intact, and the run can
# continue once there is room. A second writer is refused by the lock. Links planted in a run
# directory are never followed.
source "$(dirname "$0")/lib.sh"
cat >"$T/c.json" <<'JSON'
{"seed": 4, "data": {"kind": "synthetic", "samples": 2000, "features": 8, "classes": 4},
 "model": {"hidden": [16]}, "training": {"batch_size": 16, "epochs": 3, "checkpoint_every": 20},
 "determinism": {"trace": "full"}}
JSON
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/full" -q
# Checkpoints are a few KB; steps.jsonl (trace full) outgrows a 100 KB file-size limit mid-run.
( ulimit -f 100; "$REPRUN" train "$T/c.json" -o "$T/small" -q ) >"$T/out" 2>"$T/err"
rc=$?
[[ $rc == 2 ]] || fail "file-size limit: expected exit 2, got $rc: $(cat "$T/err")"
[[ $(wc -l <"$T/err") == 1 ]] || fail "file-size limit: expected one error line: $(cat "$T/err")"
grep -qE 'reprun: error: .*(File too large|write failed)' "$T/err" || fail "unclear error: $(cat "$T/err")"
grep -q '"status": "failed: ' "$T/small/summary.json" || fail "summary should say failed: $(cat "$T/small/summary.json")"
ls "$T/small/checkpoints/"*.ckpt >/dev/null 2>&1 || fail "no checkpoint left"
ls "$T/small/checkpoints/" | grep -q tmp && fail "a temporary checkpoint file was left behind"
expect_rc 0 "$REPRUN" train --resume "$T/small" -q
cmp -s "$T/full/steps.jsonl" "$T/small/steps.jsonl" || fail "resume after disk full differs"

# Two writers: the second refuses.
cp "$T/c.json" "$T/long.json" && json_edit "$T/long.json" training.epochs=2000
"$REPRUN" train "$T/long.json" -o "$T/busy" -q &
pid=$!
for _ in $(seq 200); do [[ -s "$T/busy/steps.jsonl" ]] && break; sleep 0.02; done
expect_error 'busy: another reprun process is writing this run directory \(locked\)' "$REPRUN" train --resume "$T/busy" -q
kill -INT "$pid"
wait "$pid"

# Links in a run directory are not followed.
cp -r "$T/full" "$T/linked"
echo "outside" >"$T/outside.jsonl"
rm "$T/linked/steps.jsonl"
ln -s "$T/outside.jsonl" "$T/linked/steps.jsonl"
expect_error 'linked/steps.jsonl: is a symbolic link' "$REPRUN" diff "$T/full" "$T/linked"
cp -r "$T/small" "$T/linked2"
[[ $(json_get "$T/linked2/summary.json" status) == complete ]] || fail "linked2 did not complete"
json_edit "$T/linked2/summary.json" status=interrupted
rm "$T/linked2/steps.jsonl"
ln -s "$T/outside.jsonl" "$T/linked2/steps.jsonl"
run_rc "$REPRUN" train --resume "$T/linked2" -q
[[ $RC == 2 ]] || fail "resume through a linked steps.jsonl should fail, got $RC"
[[ $(cat "$T/outside.jsonl") == outside ]] || fail "a write went through a link outside the run directory"
pass
