// The CPU kernel backend: see include/reprun/train/backend.hpp.
#include "reprun/train/backend.hpp"

#include "reprun/train/gemm.hpp"

#include <nlohmann/json.hpp>

namespace reprun {

nlohmann::ordered_json kernel_facts() { return {{"gemm", gemm_kernel_name()}}; }

} // namespace reprun
