// The optimizer's update loops with their sums of squares (update_loops.hpp) compiled for AVX-512
// (this file alone is compiled with -mavx512f; called only when the kernel set in use is AVX-512).
#include "update_loops.hpp"

namespace reprun::detail {

const UpdateKernels& update_kernels_avx512() {
  static const UpdateKernels k{sgd_loop, adam_loop};
  return k;
}

} // namespace reprun::detail
