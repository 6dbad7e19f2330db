# tests/gpu/test_train_cuda_atomic.sh on the CPU emulator of the CUDA runtime (tests/cuda_emu/): the
# CUDA backend's kernels makes reduction "atomic" differ between runs (the emulator shuffles block order) and check localizes it. CI has no GPU; make test-gpu runs the same test on one.
source "$(dirname "$0")/lib.sh"
run_on_cuda_emulator test_train_cuda_atomic.sh
