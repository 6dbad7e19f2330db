// The exchange of a build without MPI (include/reprun/train/exchange.hpp): one process, always. A
// launch with several ranks is refused, since each would train the whole run on its own.
#include "reprun/train/exchange.hpp"

#include "reprun/core/error.hpp"

#include <fmt/format.h>

namespace reprun {

Exchange* mpi_world(const std::atomic<bool>*) {
  if (launched_rank() >= 0 && launched_size() > 1) {
    throw Error(fmt::format("rank {} of {}", launched_rank(), launched_size()),
                "this reprun was built without MPI, so it cannot train as one of several ranks; rebuild with "
                "libopenmpi-dev installed (cmake -DREPRUN_MPI=ON)");
  }
  return nullptr;
}

std::string mpi_library() { return ""; }

bool mpi_started() { return false; }

void mpi_finish(bool, int) {}

} // namespace reprun
