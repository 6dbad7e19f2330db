// Built without the CUDA Toolkit: the CUDA backend does not exist, and says so in one line
// (determinism.device "cuda" is refused before anything runs). backend_cuda.cu is the real one.
#include "reprun/train/backend.hpp"

#include "reprun/core/error.hpp"

namespace reprun {

std::string cuda_unavailable() {
  return "this reprun was built without CUDA (no nvcc was found at build time; rebuild with the CUDA Toolkit "
         "installed)";
}

std::unique_ptr<Backend> make_cuda_backend() { throw Error("determinism.device", cuda_unavailable()); }

} // namespace reprun
