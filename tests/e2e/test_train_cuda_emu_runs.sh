# tests/gpu/test_train_cuda_runs.sh on the CPU emulator of the CUDA runtime (tests/cuda_emu/): the
# CUDA backend's kernels trains a CSV folder as the CPU does, resumes across devices, passes check --vary device. CI has no GPU; make test-gpu runs the same test on one.
source "$(dirname "$0")/lib.sh"
run_on_cuda_emulator test_train_cuda_runs.sh
