// CUDA device query through the runtime API (statically linked cudart, which loads the driver at
// run time): no driver or no device is a normal answer, reported in `error`, never a failure.
// Device UUIDs are deliberately not read.
#include "meta/cuda_query.hpp"

#include <cuda_runtime.h>

namespace reprun {

CudaFacts query_cuda() {
  CudaFacts f;
  f.built_with_cuda = true;
  cudaRuntimeGetVersion(&f.runtime_version);
  cudaDriverGetVersion(&f.driver_version);
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    f.error = cudaGetErrorString(e);
    cudaGetLastError(); // clear
    // The static runtime reports a missing libcuda as an insufficient driver; only a driver that
    // answers with its version is one that is really too old.
    if (e == cudaErrorInsufficientDriver) {
      f.status = f.driver_version > 0 ? CudaFacts::Status::driver_too_old : CudaFacts::Status::no_driver;
    } else if (e == cudaErrorNoDevice) {
      f.status = CudaFacts::Status::no_device;
    } else {
      f.status = CudaFacts::Status::other;
    }
    return f;
  }
  f.status = CudaFacts::Status::ok;
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
      continue;
    }
    GpuDevice d;
    d.name = p.name;
    d.cc_major = p.major;
    d.cc_minor = p.minor;
    d.sm_count = p.multiProcessorCount;
    d.memory_bytes = p.totalGlobalMem;
    f.devices.push_back(d);
  }
  return f;
}

} // namespace reprun
