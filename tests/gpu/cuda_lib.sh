# Shared by the tests of the trainer's CUDA backend (tests/gpu/test_train_cuda_*.sh): the e2e
# helpers, then a skip (exit 125) unless an NVIDIA GPU is here and this reprun can train on it.
# A GPU that nvidia-smi lists but reprun cannot use is a failure, not a skip. With
# REPRUN_CUDA_EMULATOR=1 (tests/e2e/test_train_cuda_emu_*.sh) $REPRUN is reprun_cudaemu, whose
# CUDA backend runs on the CPU emulator of tests/cuda_emu/, and no GPU is needed.
source "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"
if [[ ${REPRUN_CUDA_EMULATOR:-} == 1 ]]; then
  echo "the CUDA backend on the CPU emulator: $REPRUN"
else
  nvidia-smi -L >/dev/null 2>&1 || skip "no NVIDIA GPU (nvidia-smi -L failed or is not installed)"
fi
small_config "$T/probe.json"
run_rc "$REPRUN" train "$T/probe.json" -o "$T/probe" --device cuda -q --set training.epochs=null --set training.steps=1
if [[ $RC != 0 ]]; then
  grep -q 'built without CUDA' "$T/err" && skip "this reprun was built without CUDA (no nvcc at build time)"
  fail "nvidia-smi lists a GPU but reprun cannot train on it (exit $RC): $(cat "$T/err")"
fi
rm -rf "$T/probe" "$T/probe.json"

# same_steps A B WHAT: the two runs' steps.jsonl and evals.jsonl are byte-identical.
same_steps() {
  cmp -s "$1/steps.jsonl" "$2/steps.jsonl" || fail "$3: steps.jsonl differs ($(cmp "$1/steps.jsonl" "$2/steps.jsonl" | head -1))"
  cmp -s "$1/evals.jsonl" "$2/evals.jsonl" || fail "$3: evals.jsonl differs"
}
