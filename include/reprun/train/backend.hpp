// The kernel backend of the trainer: the operations the model and the optimizer need, behind one
// interface, so a second implementation (CUDA) replaces the CPU one without touching the model.
#pragma once

#include <nlohmann/json_fwd.hpp>

namespace reprun {

// The kernels this process uses, for the manifest ({"gemm": "avx512"}).
nlohmann::ordered_json kernel_facts();

} // namespace reprun
