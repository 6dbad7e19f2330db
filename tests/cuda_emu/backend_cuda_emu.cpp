// The CUDA backend, src/train/backend_cuda.cu itself, compiled by the host compiler against the CPU
// emulator of tests/cuda_emu/cuda_runtime.h: reprun_cudaemu is reprun whose --device cuda runs the
// backend's kernels on the CPU. A test tool (tests/e2e/test_train_cuda_emu.sh), never installed.
#include "../../src/train/backend_cuda.cu"
