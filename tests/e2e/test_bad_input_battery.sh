# More of the bad-input battery (with test_train_bad_input.sh, test_diff_testdata.sh and
# test_exec_failures.sh, well over 50 cases): run directories, step-log lines, checkpoints, exec
# step logs and command-line arguments. Each: the documented exit code, one clear line naming the
# file and position, no crash.
source "$(dirname "$0")/lib.sh"
R="$TD/runs"
mkrun() { # mkrun NAME: a copy of testdata/runs/base to break
  rm -rf "$T/$1"
  cp -r "$R/base" "$T/$1"
}
line() { # line NAME TEXT: replaces step line 3 of the run's log
  mkrun "$1"
  awk -v t="$2" 'NR == 3 { print t; next } { print }' "$R/base/steps.jsonl" >"$T/$1/steps.jsonl"
}

# Run directories.
mkrun nosteps && rm "$T/nosteps/steps.jsonl"
expect_error 'nosteps: run directory has no steps.jsonl' "$REPRUN" diff "$R/base" "$T/nosteps"
mkrun badsummary && printf '{"status": ' >"$T/badsummary/summary.json"
expect_error 'badsummary/summary.json: corrupt summary' "$REPRUN" diff "$R/base" "$T/badsummary"
mkrun arraymanifest && printf '[1, 2]' >"$T/arraymanifest/manifest.json"
expect_error 'arraymanifest/manifest.json: manifest has no "format" field' "$REPRUN" diff "$R/base" "$T/arraymanifest"
mkrun otherformat && json_edit "$T/otherformat/manifest.json" format=mlflow.run/1
expect_error "otherformat/manifest.json: unknown format 'mlflow.run/1'" "$REPRUN" diff "$R/base" "$T/otherformat"
mkrun emptymanifest && : >"$T/emptymanifest/manifest.json"
expect_error 'emptymanifest/manifest.json: corrupt manifest' "$REPRUN" diff "$R/base" "$T/emptymanifest"
# A path given by hand that is no run: an empty file, a folder without a manifest, nothing at all,
# on either side.
: >"$T/empty.jsonl"
expect_error 'empty.jsonl: an empty file' "$REPRUN" diff "$R/base" "$T/empty.jsonl"
expect_error 'empty.jsonl: an empty file' "$REPRUN" diff "$T/empty.jsonl" "$R/base"
mkdir "$T/plainfolder"
expect_error 'plainfolder: not a run directory' "$REPRUN" diff "$R/base" "$T/plainfolder"
expect_error 'nothere: no such file or directory' "$REPRUN" diff "$T/nothere" "$R/base"
# exec's work directory for its run, and a run's manifest for the run: each error says what to give.
mkdir -p "$T/workdir" && cp -r "$R/base" "$T/workdir/run-1"
expect_error "workdir: not a run directory \(no manifest.json\); it holds exec's runs: did you mean .*workdir/run-1\?" \
  "$REPRUN" diff "$R/base" "$T/workdir"
expect_error 'base/manifest.json: a file of the run directory .*base, not a step log: compare the directory itself' \
  "$REPRUN" diff "$R/base" "$R/base/manifest.json"

# Step-log lines.
line negstep '{"step":-2,"loss":0.5}'
expect_error 'negstep/steps.jsonl:3: missing or invalid "step"' "$REPRUN" diff "$R/base" "$T/negstep"
line floatstep '{"step":2.5,"loss":0.5}'
expect_error 'floatstep/steps.jsonl:3: missing or invalid "step"' "$REPRUN" diff "$R/base" "$T/floatstep"
line nostep '{"loss":0.5}'
expect_error 'nostep/steps.jsonl:3: missing or invalid "step"' "$REPRUN" diff "$R/base" "$T/nostep"
line strloss '{"step":2,"loss":"low"}'
expect_error 'strloss/steps.jsonl:3: "loss" must be a number' "$REPRUN" diff "$R/base" "$T/strloss"
line badtensors '{"step":2,"loss":0.5,"tensors":[1,2]}'
expect_error 'badtensors/steps.jsonl:3: "tensors" must be an object' "$REPRUN" diff "$R/base" "$T/badtensors"
line badtensor '{"step":2,"loss":0.5,"tensors":{"w":{"norm":"big"}}}'
expect_error 'badtensor/steps.jsonl:3: tensor "w": "norm" must be a number' "$REPRUN" diff "$R/base" "$T/badtensor"
line badtrace '{"step":2,"loss":0.5,"forward":{"a":1}}'
expect_error 'badtrace/steps.jsonl:3: "forward" must be a list' "$REPRUN" diff "$R/base" "$T/badtrace"
line badmetrics '{"step":2,"loss":0.5,"metrics":{"acc":"high"}}'
expect_error 'badmetrics/steps.jsonl:3: metric "acc" must be a number' "$REPRUN" diff "$R/base" "$T/badmetrics"
line arrayline '[2, 0.5]'
expect_error 'arrayline/steps.jsonl:3: a step record must be a JSON object' "$REPRUN" diff "$R/base" "$T/arrayline"
mkrun binary && head -c 300 /dev/urandom | tr -d '\n' >>"$T/binary/steps.jsonl" && echo >>"$T/binary/steps.jsonl"
expect_error 'binary/steps.jsonl:8: not valid JSON' "$REPRUN" diff "$R/base" "$T/binary"

# Checkpoints: a corrupt one is reported and skipped; resume then uses an older one or starts over.
cat >"$T/c.json" <<'JSON'
{"seed": 2, "data": {"kind": "synthetic", "samples": 400, "features": 6, "classes": 3},
 "model": {"hidden": [8]}, "training": {"batch_size": 16, "epochs": 2, "checkpoint_every": 5, "checkpoint_keep": 1}}
JSON
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/ref" -q
# ckpt_set_format FILE OLD NEW: a checkpoint is 8 bytes of magic, a one-line JSON header, then the
# binary payload. This rewrites the header's "format" from OLD to NEW as JSON (sed on the bytes
# did nothing if the key or its value moved), leaving magic and payload as they were.
ckpt_set_format() {
  python3 - "$@" <<'PY' || fail "ckpt_set_format $*"
import json, sys
path, old, new = sys.argv[1:]
data = open(path, "rb").read()
nl = data.index(b"\n", 8)
header = json.loads(data[8:nl])
if header.get("format") != old:
    sys.exit(f"ckpt_set_format: {path}: header format is {header.get('format')!r}, not {old!r}")
header["format"] = new
with open(path, "wb") as f:
    f.write(data[:8] + json.dumps(header, separators=(",", ":")).encode() + data[nl:])
PY
}
ckpt_case() { # ckpt_case NAME EXPECTED_NOTE COMMAND-TO-BREAK-THE-CHECKPOINT
  local name=$1 note=$2 breaker=$3
  run_rc "$REPRUN" train "$T/c.json" -o "$T/$name" -q --kill-after-step 12
  local ck
  ck=$(ls "$T/$name/checkpoints/"*.ckpt)
  eval "$breaker"
  expect_rc 0 "$REPRUN" train --resume "$T/$name"
  grep -qE "skipping checkpoint: .*$note" "$T/err" || fail "checkpoint $name: note missing: $(cat "$T/err")"
  grep -q "resuming .* from step 0" "$T/err" || fail "checkpoint $name: should start over"
  cmp -s "$T/ref/steps.jsonl" "$T/$name/steps.jsonl" || fail "checkpoint $name: resumed run differs"
}
ckpt_case truncated 'payload is [0-9]+ bytes, header says [0-9]+ \(truncated\)' 'truncate -s -100 "$ck"'
ckpt_case badmagic 'not a reprun checkpoint \(bad magic\)' 'printf "XXXXXXXX" | dd of="$ck" conv=notrunc status=none'
ckpt_case digest 'payload SHA-256 does not match' 'printf "\x01\x02\x03" | dd of="$ck" bs=1 seek=$(($(stat -c %s "$ck") - 8)) conv=notrunc status=none'
ckpt_case future 'checkpoint format version 7 is newer' 'ckpt_set_format "$ck" reprun.checkpoint/1 reprun.checkpoint/7'
ckpt_case emptyck 'not a reprun checkpoint' ': >"$ck"'
# A checkpoint from another configuration.
run_rc "$REPRUN" train "$T/c.json" -o "$T/other" -q --set model.hidden=[9] --kill-after-step 12
run_rc "$REPRUN" train "$T/c.json" -o "$T/mixed" -q --kill-after-step 12
rm "$T/mixed/checkpoints/"*.ckpt
cp "$T/other/checkpoints/"*.ckpt "$T/mixed/checkpoints/"
expect_rc 0 "$REPRUN" train --resume "$T/mixed"
grep -q 'skipping checkpoint: .*belongs to another configuration' "$T/err" || fail "other config: $(cat "$T/err")"

# Exec step logs.
exec_log() { # exec_log NAME PATTERN LINE
  printf '#!/bin/sh\necho %s >>"$REPRUN_STEP_LOG"\n' "'$3'" >"$T/$1.sh"
  chmod +x "$T/$1.sh"
  expect_error "$2" "$REPRUN" exec -o "$T/x-$1" -q -- "$T/$1.sh"
}
exec_log ex_array 'steps.jsonl:1: a step record must be a JSON object' '[1]'
exec_log ex_nostep 'steps.jsonl:1: missing or invalid "step"' '{"loss": 1}'
exec_log ex_text 'steps.jsonl:1: not valid JSON' 'epoch 1 done'
printf '#!/bin/sh\nprintf "{\\"step\\":1}" >>"$REPRUN_STEP_LOG"\n' >"$T/ex_cut.sh" && chmod +x "$T/ex_cut.sh"
expect_error 'steps.jsonl:1: last line is not terminated by a newline' "$REPRUN" exec -o "$T/x-cut" -q -- "$T/ex_cut.sh"

# Command-line arguments.
expect_error "The following argument was not expected: --nope" "$REPRUN" train "$T/c.json" --nope
expect_error "threads" "$REPRUN" train "$T/c.json" --threads abc
expect_error "RUN_B is required" "$REPRUN" diff "$R/base"
expect_error "unknown report format" "$REPRUN" check "$T/c.json" --format yaml
expect_error "--rtol: expected a finite number >= 0, got -1 " "$REPRUN" diff "$R/base" "$R/same" --rtol -1
# The bound is not spelled out in 309 digits, and nan is not a tolerance (it was taken, then ignored).
[[ $(wc -c <"$T/err") -lt 200 ]] || fail "the --rtol error is $(wc -c <"$T/err") bytes long: $(cat "$T/err")"
expect_error "--atol: expected a finite number >= 0, got nan" "$REPRUN" diff "$R/base" "$R/same" --atol nan
expect_error "--max-ulps: expected a finite number >= 0, got -5" "$REPRUN" diff "$R/base" "$R/same" --max-ulps -5
expect_error "runs" "$REPRUN" check "$T/c.json" --runs 1
expect_error "PATHS is required" "$REPRUN" hash
expect_error "unknown command 'dif' \(did you mean 'diff'\?\)" "$REPRUN" dif a b
expect_error "A subcommand is required" "$REPRUN"
expect_error "exec varies environment variables" "$REPRUN" exec --vary threads=1,2 -- true
expect_error "--pin FOO: expected NAME=VALUE" "$REPRUN" exec --pin FOO -- true
pass
