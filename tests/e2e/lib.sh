# Shared helpers for the end-to-end tests: each test_*.sh sources this, runs the real binary
# ($REPRUN, set by CTest) in its own temporary folder, and keeps that folder when it fails.
set -u
: "${REPRUN:?set REPRUN to the reprun binary}"
: "${REPRUN_SRC:?set REPRUN_SRC to the source tree}"
T=$(mktemp -d "${TMPDIR:-/tmp}/reprun-e2e.XXXXXX")
EX="$REPRUN_SRC/examples"
TD="$REPRUN_SRC/testdata"
cd "$T" || exit 1

fail() {
  echo "FAIL: $*" >&2
  echo "(temporary folder kept: $T)" >&2
  exit 1
}

pass() {
  echo "ok: $(basename "$0")"
  rm -rf "$T"
  exit 0
}

skip() {
  echo "SKIPPED: $*"
  rm -rf "$T"
  exit 125
}

# own_tmpdir: TMPDIR for what the test runs, beside its folder (not in the program's working
# directory), removed at exit. torchrun's agent makes a torchelastic_* folder in TMPDIR at each
# launch and leaves it there.
own_tmpdir() {
  export TMPDIR="$T.tmp"
  mkdir -p "$TMPDIR"
  trap 'rm -rf "$TMPDIR"' EXIT
}

# run_rc CMD...: runs a command, stdout to $T/out, stderr to $T/err; sets RC.
run_rc() {
  "$@" >"$T/out" 2>"$T/err"
  RC=$?
}

# expect_rc CODE CMD...
expect_rc() {
  local want=$1
  shift
  run_rc "$@"
  [[ $RC == "$want" ]] || fail "expected exit $want, got $RC from: $*
stderr: $(head -c 2000 "$T/err")"
}

# expect_error PATTERN CMD...: exit 2, exactly one stderr line "reprun: error: ..." matching PATTERN.
expect_error() {
  local pattern=$1
  shift
  expect_rc 2 "$@"
  local lines
  lines=$(wc -l <"$T/err")
  [[ $lines == 1 ]] || fail "expected one error line, got $lines from: $*
$(cat "$T/err")"
  grep -q '^reprun: error: ' "$T/err" || fail "error line lacks 'reprun: error: ': $(cat "$T/err")"
  grep -qE -- "$pattern" "$T/err" || fail "error line does not match /$pattern/: $(cat "$T/err")"
}

# wait_for_steps RUN_DIR N: waits (30 s at most) until RUN_DIR/steps.jsonl has N lines.
wait_for_steps() {
  for _ in $(seq 600); do
    [[ $(cat "$1/steps.jsonl" 2>/dev/null | wc -l) -ge $2 ]] && return 0
    sleep 0.05
  done
}

# expect_interrupted RC RUN_DIR WHAT: a run a signal stopped exited RC = 130, its status says
# interrupted, and it checkpointed the step it stopped after.
expect_interrupted() {
  [[ $1 == 130 ]] || fail "$3: exit $1, expected 130"
  local status stopped
  status=$(json_get "$2/summary.json" status)
  [[ $status == interrupted ]] || fail "$3: status $status"
  stopped=$(json_get "$2/summary.json" steps)
  [[ -e $2/checkpoints/$(printf 'step-%09d.ckpt' "$stopped") ]] || fail "$3: no checkpoint of step $stopped: $(ls "$2/checkpoints")"
}

# expect_backward_localization REPORT WHAT: a `check --format json` REPORT that failed and localized
# its first pair to the gradient of a dense layer in the backward pass (what reduction "atomic" does).
expect_backward_localization() {
  python3 - "$1" <<'PY' || fail "$2 did not localize to a backward tensor: $(head -c 3000 "$1")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["identical"] is False and r["verdict"].startswith("FAIL"), r["verdict"]
loc = r["pairs"][0]["localization"]
assert loc["found"] and loc["phase"] == "backward", loc
assert loc["layer"].startswith("dense_") and "gradient" in loc["tensor"], loc
PY
}

# small_config FILE [extra JSON members...]: a quick synthetic config.
small_config() {
  local file=$1
  shift
  local extra=""
  for m in "$@"; do extra+=", $m"; done
  cat >"$file" <<JSON
{"seed": 5,
 "data": {"kind": "synthetic", "samples": 600, "features": 12, "classes": 3},
 "model": {"hidden": [16, 16]},
 "training": {"batch_size": 32, "epochs": 2, "checkpoint_every": 10, "eval_every": 20}${extra}}
JSON
}

# python_with MODULE: a Python interpreter that can import MODULE, or nothing (a line on stderr says
# why). The torch leg CTest runs the test on (REPRUN_TORCH_LEG, CMakeLists.txt) decides which:
#   system (or unset): the first python3 on PATH, then Debian's /usr/bin/python3 (python3-torch 1.13);
#   venv: the tests' virtual environment with PyPI's torch 2.x (tools/torch-venv, which make test's
#         dependency step installs).
python_with() {
  local py
  if [[ ${REPRUN_TORCH_LEG:-system} == venv ]]; then
    py=$(bash "$REPRUN_SRC/tools/torch-venv" python) || {
      echo "the torch2 leg's virtual environment is not installed ($(bash "$REPRUN_SRC/tools/torch-venv" path); tools/torch-venv install makes it)" >&2
      return 1
    }
    "$py" -c "import $1" >/dev/null 2>&1 && echo "$py" && return 0
    echo "$py cannot import $1" >&2
    return 1
  fi
  for py in "$(command -v python3 || true)" /usr/bin/python3; do
    [[ -n $py && -x $py ]] || continue
    if "$py" -c "import $1" >/dev/null 2>&1; then
      echo "$py"
      return 0
    fi
  done
  return 1
}

# python_with_cuda_torch: a Python interpreter whose torch sees a GPU (torch.cuda.is_available()),
# or nothing.
python_with_cuda_torch() {
  local py
  for py in "$(command -v python3 || true)" /usr/bin/python3; do
    [[ -n $py && -x $py ]] || continue
    if "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
      echo "$py"
      return 0
    fi
  done
  return 1
}

# json_edit FILE EDIT...: edits a JSON file in place. Each EDIT is one of
#   KEY=VALUE   sets a key that is there;
#   KEY+=VALUE  sets a key, adding it when it is not there;
#   KEY:delete  removes a key that is there.
# KEY is dotted ("training.epochs"); VALUE is parsed as JSON, else taken as a string (so KEY=null
# sets null; use KEY:delete to remove a key). Every parent object must exist, and so must the key
# unless it is added with +=: a key that moved fails the test instead of leaving the file as it
# was (which is what sed would do). Nothing is written unless every edit applies.
json_edit() {
  python3 - "$@" <<'PY' || fail "json_edit $*"
import json, sys
if len(sys.argv) < 3:
    sys.exit("json_edit: usage: json_edit FILE KEY=VALUE|KEY+=VALUE|KEY:delete...")
path, edits = sys.argv[1], sys.argv[2:]
with open(path) as f:
    doc = json.load(f)
for e in edits:
    if "=" in e:
        key, value = e.split("=", 1)
        op = "add" if key.endswith("+") else "set"
        key = key[:-1] if op == "add" else key
        try:
            value = json.loads(value)
        except ValueError:
            pass
    elif e.endswith(":delete"):
        key, op = e[:-len(":delete")], "delete"
    else:
        sys.exit(f"json_edit: '{e}' is none of KEY=VALUE, KEY+=VALUE, KEY:delete")
    if not key or "" in key.split("."):
        sys.exit(f"json_edit: '{e}' has an empty key")
    *parents, leaf = key.split(".")
    node = doc
    for p in parents:
        if not isinstance(node, dict) or p not in node:
            sys.exit(f"json_edit: {path}: no key '{p}' on the way to '{key}'")
        node = node[p]
    if not isinstance(node, dict):
        where = ".".join(parents) or "the top level"
        sys.exit(f"json_edit: {path}: {where} is not an object, on the way to '{key}'")
    if op != "add" and leaf not in node:
        hint = "" if op == "delete" else f" (use {key}+=VALUE to add one)"
        sys.exit(f"json_edit: {path}: no key '{key}'{hint}")
    if op == "delete":
        del node[leaf]
    else:
        node[leaf] = value
with open(path, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
PY
}

# record DIR PROGRAM ARGS...: one run of PROGRAM kept as a reference (reprun exec -o DIR --runs 1),
# in the current folder; its stdout and stderr in $T/rec.out and $T/rec.err; fails the test when
# exec fails. (test_exec_inputs.sh has its own, through expect_rc.)
record() {
  local dir=$1
  shift
  rm -rf "$dir"
  "$REPRUN" exec -o "$dir" --runs 1 -q -- "$@" >"$T/rec.out" 2>"$T/rec.err" ||
    fail "exec -o $dir -- $*: exit $? ($(cat "$T/rec.err"))"
}

# json_get FILE KEY: prints a value of a JSON file (strings raw, the rest as JSON); fails the test
# when the key is missing.
json_get() {
  python3 - "$@" <<'PY' || fail "json_get $*"
import json, sys
path, key = sys.argv[1], sys.argv[2]
with open(path) as f:
    node = json.load(f)
for p in key.split("."):
    if not isinstance(node, dict) or p not in node:
        sys.exit(f"json_get: {path}: no key '{key}'")
    node = node[p]
print(node if isinstance(node, str) else json.dumps(node))
PY
}

# run_on_cuda_emulator GPU_TEST: runs tests/gpu/GPU_TEST with reprun_cudaemu as $REPRUN, that is the
# CUDA backend's own source on the CPU emulator of tests/cuda_emu/ (CI has no GPU), and ends this
# test as that one ends.
run_on_cuda_emulator() {
  [[ -n ${REPRUN_CUDAEMU:-} ]] || skip "reprun_cudaemu is not built in a sanitizer build (CMakeLists.txt says why)"
  rm -rf "$T"
  REPRUN=$REPRUN_CUDAEMU REPRUN_CUDA_EMULATOR=1 exec bash "$REPRUN_SRC/tests/gpu/$1"
}
