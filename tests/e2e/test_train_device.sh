# determinism.device and --device: cpu is the default and changes no bit; the key appears in the
# resolved config only when given; cuda where it cannot run (a build without CUDA, no GPU) is one
# error line, exit 2, before any run directory exists; `check --vary device=...` and
# `check --device` reach every run. On a machine where CUDA runs, tests/gpu/ covers the rest.
source "$(dirname "$0")/lib.sh"
small_config "$T/c.json"
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/plain" -q
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/cpu" -q --device cpu
cmp -s "$T/plain/steps.jsonl" "$T/cpu/steps.jsonl" || fail "--device cpu changed the bits"
grep -q '"device"' "$T/plain/manifest.json" && fail "a config without determinism.device resolves with it"
grep -q '"device": "cpu"' "$T/cpu/manifest.json" || fail "--device cpu is not recorded in the resolved config"
expect_rc 0 "$REPRUN" diff "$T/plain" "$T/cpu"
grep -q '^IDENTICAL' "$T/out" || fail "the device is an execution setting, not counted: $(head -3 "$T/out")"

run_rc "$REPRUN" train "$T/c.json" -o "$T/gpu" -q --device cuda
if [[ $RC == 2 ]]; then
  # No usable CUDA here: refused in one line naming the flag, or the key, and nothing created.
  expect_error '^reprun: error: --device cuda: (this reprun was built without CUDA|no usable CUDA GPU|no CUDA GPU found|no NVIDIA driver found).*train on the CPU' \
    "$REPRUN" train "$T/c.json" -o "$T/gpu" -q --device cuda
  [[ -e $T/gpu ]] && fail "a refused --device cuda created its run directory"
  small_config "$T/g.json" '"determinism": {"device": "cuda"}'
  expect_error 'g\.json: determinism\.device: .*CUDA' "$REPRUN" train "$T/g.json" -o "$T/gpu" -q
  [[ -e $T/gpu ]] && fail "a refused determinism.device created its run directory"
  # A stopped run resumed with --device cuda is refused the same way, and resumes on the CPU.
  expect_rc 137 "$REPRUN" train "$T/c.json" -o "$T/k" -q --kill-after-step 7
  expect_error '^reprun: error: --device cuda: ' "$REPRUN" train --resume "$T/k" -q --device cuda
  expect_rc 0 "$REPRUN" train --resume "$T/k" -q --device cpu
  cmp -s "$T/plain/steps.jsonl" "$T/k/steps.jsonl" || fail "the resume after a refused --device cuda differs"
  expect_error '^reprun: error: --vary device: .*no run can train on cuda here' "$REPRUN" check "$T/c.json" \
    -o "$T/chk" -q --vary device=cpu,cuda
  [[ -e $T/chk/run-1 ]] && fail "check trained run 1 although run 2 could not train on cuda"
else
  [[ $RC == 0 ]] || fail "--device cuda: exit $RC: $(cat "$T/err")"
fi
# Several ranks on one GPU are refused whatever this machine has.
expect_error '^reprun: error: --device cuda: 2 ranks: the CUDA backend runs in one process' "$REPRUN" train \
  "$T/c.json" -o "$T/r2" -q --device cuda --ranks 2
[[ -e $T/r2 ]] && fail "a refused --device cuda --ranks 2 created its run directory"
expect_error "determinism\.device: expected one of \"cpu\", \"cuda\", got \"gpu\"" "$REPRUN" train "$T/c.json" -q \
  --set determinism.device=gpu
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/chk2" -q --vary device=cpu,cpu --format json
python3 - "$T/out" <<'PY' || fail "check --vary device=cpu,cpu: $(head -c 2000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["identical"] is True, r["verdict"]
PY
expect_error "'gpu' is not a device; expected cpu or cuda" "$REPRUN" check "$T/c.json" -q --vary device=cpu,gpu
pass
