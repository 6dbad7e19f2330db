// What the MPI launcher told this process, read from the environment only (no MPI call), so that
// the plain binary and the build without MPI can tell whether they run as one of several ranks.
#include "reprun/train/exchange.hpp"

#include <climits>
#include <cstdlib>

namespace reprun {

namespace {
int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) {
    return -1;
  }
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return *end == '\0' && x >= 0 && x < INT_MAX ? static_cast<int>(x) : -1;
}
} // namespace

int launched_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (int r = env_int(v); r >= 0) {
      return r;
    }
  }
  return -1;
}

int launched_size() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    if (int n = env_int(v); n > 0) {
      return n;
    }
  }
  return 0;
}

} // namespace reprun
