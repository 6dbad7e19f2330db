// The MPI exchange (include/reprun/train/exchange.hpp): the only file that includes mpi.h. It moves
// bytes between ranks and never adds a float. Every wait polls, so that a job whose rank died
// (mpirun then stops the others with SIGTERM, which sets `stop`) ends with an error naming the rank
// this one waited for, instead of waiting forever.
#include "reprun/train/exchange.hpp"

#include "reprun/core/error.hpp"

#define OMPI_SKIP_MPICXX 1 // the C API only: no C++ bindings to link
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <climits>
#include <fmt/format.h>
#include <sched.h>
#include <vector>

namespace reprun {

namespace {

// After a stop signal, a wait that makes no progress for this long means a peer is gone.
constexpr auto k_stalled = std::chrono::milliseconds(500);

int count_of(size_t bytes) {
  if (bytes > static_cast<size_t>(INT_MAX)) {
    throw Error("mpi", fmt::format("internal: a message of {} bytes is larger than one MPI count", bytes));
  }
  return static_cast<int>(bytes);
}

class MpiExchange final : public Exchange {
public:
  explicit MpiExchange(const std::atomic<bool>* stop) : m_stop(stop) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &m_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m_size);
  }

  int rank() const override { return m_rank; }
  int size() const override { return m_size; }

  void recv(void* buf, size_t bytes, int from, int tag) override {
    MPI_Request r;
    check(MPI_Irecv(buf, count_of(bytes), MPI_BYTE, from, tag, MPI_COMM_WORLD, &r), from);
    wait(&r, 1, from);
  }

  void send(const void* buf, size_t bytes, int to, int tag) override {
    m_sends.emplace_back();
    check(MPI_Isend(buf, count_of(bytes), MPI_BYTE, to, tag, MPI_COMM_WORLD, &m_sends.back()), to);
  }

  void wait_sends() override {
    if (!m_sends.empty()) {
      wait(m_sends.data(), static_cast<int>(m_sends.size()), m_rank + 1);
      m_sends.clear();
    }
  }

  void broadcast(void* buf, size_t bytes, int root) override {
    MPI_Request r;
    check(MPI_Ibcast(buf, count_of(bytes), MPI_BYTE, root, MPI_COMM_WORLD, &r), root);
    wait(&r, 1, root);
  }

  // Polls until the requests complete; spins (as MPI's own blocking calls do) but yields, so that
  // more ranks than cores (--oversubscribe) still make progress.
  void wait(MPI_Request* r, int n, int peer) {
    std::chrono::steady_clock::time_point stopped{};
    for (;;) {
      int done = 0;
      check(MPI_Testall(n, r, &done, MPI_STATUSES_IGNORE), peer);
      if (done) {
        return;
      }
      if (m_stop && m_stop->load()) {
        const auto now = std::chrono::steady_clock::now();
        if (stopped == std::chrono::steady_clock::time_point{}) {
          stopped = now;
        } else if (now - stopped > k_stalled) {
          throw Error(fmt::format("rank {}", m_rank),
                      fmt::format("the job was stopped while waiting for rank {}: a rank ended (mpirun names it)",
                                  peer));
        }
      }
      sched_yield();
    }
  }

  void check(int rc, int peer) const {
    if (rc != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      int len = 0;
      MPI_Error_string(rc, text, &len);
      throw Error(fmt::format("rank {}", m_rank), fmt::format("MPI failed with rank {}: {}", peer, text));
    }
  }

private:
  const std::atomic<bool>* m_stop;
  int m_rank = 0;
  int m_size = 1;
  std::vector<MPI_Request> m_sends;
};

std::unique_ptr<MpiExchange> g_world;

} // namespace

Exchange* mpi_world(const std::atomic<bool>* stop) {
  if (!g_world) {
    if (launched_rank() < 0 || launched_size() <= 1) {
      return nullptr;
    }
    g_world = std::make_unique<MpiExchange>(stop);
  }
  return g_world.get();
}

std::string mpi_library() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len); // callable before MPI_Init (MPI-3)
  std::string s(v, static_cast<size_t>(len));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0' || s.back() == ' ')) {
    s.pop_back();
  }
  return s;
}

bool mpi_started() { return g_world != nullptr; }

void mpi_finish(bool ok, int code) {
  if (!g_world) {
    return;
  }
  if (ok) {
    g_world.reset();
    MPI_Finalize();
  } else {
    MPI_Abort(MPI_COMM_WORLD, code);
  }
}

} // namespace reprun
