// Built without the CUDA Toolkit: no runtime to ask. /proc/driver/nvidia/version still tells the
// driver (host.cpp).
#include "meta/cuda_query.hpp"

namespace reprun {
CudaFacts query_cuda() {
  CudaFacts f;
  f.error = "reprun was built without the CUDA Toolkit";
  f.status = CudaFacts::Status::not_built;
  return f;
}
} // namespace reprun
