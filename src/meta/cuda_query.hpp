// The CUDA device query: cuda_query.cu when reprun is built with the CUDA Toolkit, else
// cuda_query_none.cpp. Only the .cu file includes CUDA headers.
#pragma once

#include "reprun/meta/world.hpp"

namespace reprun {
CudaFacts query_cuda();
} // namespace reprun
