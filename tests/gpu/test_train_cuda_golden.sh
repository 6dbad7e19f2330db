# The CUDA backend gives the CPU's bits: every run of tools/golden.sh (quickstart with dropout at
# accumulation 1 and 4 with trace full, Adam + dropout + tanh with weight decay, wine from CSV with
# Adam and with SGD + weight decay, a whole mnist-mlp epoch of 469 steps) trained with
# --device cuda has the steps.jsonl and evals.jsonl digests pinned in testdata/golden/train.sha256,
# which the CPU build checks in tests/e2e/test_golden_bits.sh. Then the tiled GEMM against the
# naive one (one thread per element running the unit-tested elem::gemm_chain).
source "$(dirname "$0")/cuda_lib.sh"
pinned="$TD/golden/train.sha256"
GOLDEN_TRAIN_ARGS="--device cuda" bash "$REPRUN_SRC/tools/golden.sh" "$REPRUN" "$T/cuda" train >"$T/cuda.sha256" \
  2>"$T/err" || fail "tools/golden.sh --device cuda failed: $(cat "$T/err")"
diff "$pinned" "$T/cuda.sha256" >"$T/delta" || fail "--device cuda digests differ from testdata/golden/train.sha256:
$(cat "$T/delta")"
grep -q '"device": "cuda"' "$T/cuda/train/quickstart/manifest.json" || fail "the manifest does not record the device"
grep -q '"gemm": "cuda-tiled' "$T/cuda/train/quickstart/manifest.json" || fail "the manifest lacks the CUDA kernels"
REPRUN_CUDA_GEMM=naive expect_rc 0 "$REPRUN" train "$EX/quickstart.json" -o "$T/naive" -q --device cuda
cmp -s "$T/naive/steps.jsonl" "$T/cuda/train/quickstart/steps.jsonl" || fail "the naive GEMM differs from the tiled one"
grep -q '"gemm": "cuda-naive' "$T/naive/manifest.json" || fail "REPRUN_CUDA_GEMM=naive not recorded"
pass
