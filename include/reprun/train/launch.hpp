// `reprun train --ranks P` on one machine: runs this binary under `mpirun -np P` (Open MPI), its
// output passed through as it arrives, and reads mpirun's report of a rank that ended.
#pragma once

#include <atomic>
#include <string>
#include <vector>

namespace reprun {

struct RankLaunch {
  int exit_code = 0;      // mpirun's
  std::string dead_rank;  // "rank 1 (killed by signal 9 (Killed))" from mpirun's report, or ""
};

// Runs `mpirun -np ranks --oversubscribe --bind-to none [--allow-run-as-root] SELF args...`.
// Once `stop` is set (our SIGINT or SIGTERM), mpirun gets SIGTERM, which it passes to the ranks:
// they stop after the same step, as a run on one process does. mpirun dies with this process.
// Throws Error (exit 2) when mpirun cannot be started.
RankLaunch launch_ranks(int ranks, const std::vector<std::string>& args, const std::atomic<bool>* stop = nullptr);

} // namespace reprun
