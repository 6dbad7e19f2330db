// The ranks of a data-parallel run and the bytes they pass to each other (docs/scaling.md). The
// exchange only moves bytes: every float addition stays in the kernel backend, in the
// single-process order. exchange_mpi.cpp is the one file that includes mpi.h (Open MPI, found by
// CMake); a build without MPI compiles exchange_none.cpp instead, and runs as one process.
// This is not a collective library: point-to-point sends along the rank chain and a broadcast.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

namespace reprun {

class Exchange {
public:
  virtual ~Exchange() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Posted operations: each returns a number for wait(); the numbers restart after wait_all().
  // A receive of `bytes` from rank `from` (message `tag`), posted early so that the sender's bytes
  // land while this rank computes.
  virtual int post_recv(void* buf, size_t bytes, int from, int tag) = 0;
  // A send to rank `to`; the buffer stays unchanged until it is waited for.
  virtual int post_send(const void* buf, size_t bytes, int to, int tag) = 0;
  virtual void wait(int id) = 0;
  // Waits for every operation posted since the last wait_all.
  virtual void wait_all() = 0;
  // A broadcast, waited for. The root may return before the others have received it (MPI sends a
  // small message eagerly): it is no barrier.
  virtual void broadcast(void* buf, size_t bytes, int root) = 0;
  // Returns once every rank has called it.
  virtual void barrier() = 0;
};

// The MPI world when this process was started by an MPI launcher (mpirun, srun) with more than
// one rank and the build has MPI: MPI_Init on the first call, MPI_Finalize by mpi_finish().
// nullptr for a process on its own (the plain binary does not touch MPI at all). Throws Error
// (exit 2) when launched with several ranks by a build without MPI. A wait that makes no progress
// after `stop` was set (mpirun ends the job with SIGTERM when a rank dies) throws Error naming
// the rank waited for.
Exchange* mpi_world(const std::atomic<bool>* stop = nullptr);

// This process's rank in the launcher's world from the environment (OMPI_COMM_WORLD_RANK,
// PMIX_RANK, PMI_RANK), or -1 when no MPI launcher started it. Reads only the environment.
int launched_rank();
// The number of ranks the launcher started (OMPI_COMM_WORLD_SIZE, PMI_SIZE), 0 when unknown.
int launched_size();

// The MPI library this build uses ("Open MPI 4.1.4, MPI 3.1", found by CMake), or "" for a build without
// MPI. Loads nothing.
std::string mpi_library();

// True once mpi_world() started MPI in this process.
bool mpi_started();

// Ends MPI if mpi_world() started it: MPI_Finalize when `ok`; otherwise MPI_Abort with `code`, so
// that no rank waits forever for one that stopped (mpirun then ends the others).
void mpi_finish(bool ok, int code);

} // namespace reprun
