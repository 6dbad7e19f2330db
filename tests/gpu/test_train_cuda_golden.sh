# The CUDA backend gives the CPU's bits: every run of tools/golden.sh (quickstart with dropout at
# accumulation 1 and 4 with trace full, Adam + dropout + tanh with weight decay, wine from CSV with
# Adam and with SGD + weight decay, a whole mnist-mlp epoch of 469 steps) trained with
# --device cuda has the steps.jsonl and evals.jsonl digests pinned in testdata/golden/train.sha256,
# which the CPU build checks in tests/e2e/test_golden_bits.sh. Then the tiled GEMM against the
# naive one (one thread per element running the unit-tested elem::gemm_chain), and against each of
# its tile sizes forced on every product.
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
# The tiles by the product's size (the default) against each tile size forced on every product: the
# same chains, the same bits. On the quickstart with each size; on a GPU also every golden run with
# 16 x 16 tiles (on the emulator, whose blocks are fibers, that would take minutes).
for tiles in 16 32 128; do
  REPRUN_CUDA_GEMM=tiled-$tiles expect_rc 0 "$REPRUN" train "$EX/quickstart.json" -o "$T/t$tiles" -q --device cuda
  cmp -s "$T/t$tiles/steps.jsonl" "$T/cuda/train/quickstart/steps.jsonl" || fail "$tiles x $tiles tiles differ"
  grep -q "\"gemm\": \"cuda-tiled-${tiles}x$tiles" "$T/t$tiles/manifest.json" || fail "REPRUN_CUDA_GEMM=tiled-$tiles not recorded"
done
if [[ ${REPRUN_CUDA_EMULATOR:-} != 1 ]]; then
  REPRUN_CUDA_GEMM=tiled-16 GOLDEN_TRAIN_ARGS="--device cuda" bash "$REPRUN_SRC/tools/golden.sh" "$REPRUN" "$T/g16" train \
    >"$T/g16.sha256" 2>"$T/err" || fail "tools/golden.sh with REPRUN_CUDA_GEMM=tiled-16 failed: $(cat "$T/err")"
  diff "$pinned" "$T/g16.sha256" >"$T/delta" || fail "REPRUN_CUDA_GEMM=tiled-16 digests differ from the pinned ones:
$(cat "$T/delta")"
fi
REPRUN_CUDA_GEMM=tiled-64 expect_rc 2 "$REPRUN" train "$EX/quickstart.json" -o "$T/t64" -q --device cuda
grep -q "REPRUN_CUDA_GEMM.*tiled-64" "$T/err" || fail "REPRUN_CUDA_GEMM=tiled-64 not refused by name: $(cat "$T/err")"
pass
