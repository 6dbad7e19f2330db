// `reprun train --ranks P` on one machine: runs this binary under `mpirun -np P` (Open MPI), its
// output passed through as it arrives, and reads mpirun's report of a rank that ended.
#pragma once

#include <string>
#include <vector>

namespace reprun {

struct RankLaunch {
  int exit_code = 0;      // mpirun's
  std::string dead_rank;  // "rank 1 (killed by signal 9 (Killed))" from mpirun's report, or ""
};

// Runs `mpirun -np ranks --oversubscribe --bind-to none [--allow-run-as-root] SELF args...`.
// Throws Error (exit 2) when mpirun cannot be started.
RankLaunch launch_ranks(int ranks, const std::vector<std::string>& args);

} // namespace reprun
