# tests/gpu/test_train_cuda_golden.sh on the CPU emulator of the CUDA runtime (tests/cuda_emu/): the
# CUDA backend's kernels gives the CPU's golden digests for every tools/golden.sh run, and the tiled GEMM equals the naive one. CI has no GPU; make test-gpu runs the same test on one.
source "$(dirname "$0")/lib.sh"
run_on_cuda_emulator test_train_cuda_golden.sh
