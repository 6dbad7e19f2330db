# reprun env on a machine without an NVIDIA driver says "no GPU", in text, in --json and in a
# manifest, never the CUDA runtime's "CUDA driver version is insufficient for CUDA runtime
# version", whether reprun was built with the CUDA Toolkit or not.
source "$(dirname "$0")/lib.sh"
[[ -e /proc/driver/nvidia/version ]] && skip "this machine has an NVIDIA driver"
expect_rc 0 "$REPRUN" env --json
[[ $(json_get "$T/out" gpu.count) == 0 ]] || fail "gpu.count: $(json_get "$T/out" gpu.count)"
[[ $(json_get "$T/out" gpu.note) == 'no GPU (no NVIDIA driver)' ]] || fail "gpu.note: $(json_get "$T/out" gpu.note)"
for k in driver cuda_runtime cuda_driver_api count devices note; do
  json_get "$T/out" "gpu.$k" >/dev/null
done
expect_rc 0 "$REPRUN" env
grep -qE '^  note: no GPU \(no NVIDIA driver\)$' "$T/out" || fail "env text: $(grep -A7 '^gpu' "$T/out")"
! grep -qi 'insufficient' "$T/out" || fail "raw CUDA error shown: $(grep -i insufficient "$T/out")"
expect_rc 0 "$REPRUN" exec -o "$T/runs" -q -- true
[[ $(json_get "$T/runs/run-1/manifest.json" gpu.note) == 'no GPU (no NVIDIA driver)' ]] ||
  fail "manifest gpu.note: $(json_get "$T/runs/run-1/manifest.json" gpu.note)"
pass
