# reduction "atomic" on the GPU: float atomicAdd of 8-sample partial gradients in whatever order
# the blocks run, the deliberate non-deterministic twin. Two GPU runs differ, and `reprun check`
# on the GPU fails and localizes the divergence to a backward (gradient) tensor; the ordered
# reduction on the GPU stays identical to the CPU.
source "$(dirname "$0")/cuda_lib.sh"
small_config "$T/c.json" '"determinism": {"reduction": "atomic"}'
json_edit "$T/c.json" 'model.hidden=[256,256]' training.batch_size=256 training.epochs=6 data.samples=2000
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/a1" -q --device cuda
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/a2" -q --device cuda
cmp -s "$T/a1/steps.jsonl" "$T/a2/steps.jsonl" && fail "two atomic GPU runs were identical"
expect_rc 1 "$REPRUN" check "$T/c.json" -o "$T/w" --device cuda -q --format json
expect_backward_localization "$T/out" "atomic GPU check"
grep -rq --include=manifest.json '"device": "cuda"' "$T/w" || fail "the check's runs do not record the device"
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/o1" -q --device cuda --set determinism.reduction=ordered
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/o2" -q --set determinism.reduction=ordered
cmp -s "$T/o1/steps.jsonl" "$T/o2/steps.jsonl" || fail "ordered GPU and CPU runs differ"
pass
