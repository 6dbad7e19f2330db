// The MPI exchange (include/reprun/train/exchange.hpp): the only file that includes mpi.h. It is
// built as its own module, libreprun_mpi.so, which exchange_load.cpp loads only when a launcher
// started several ranks: the plain binary never loads Open MPI (whose loading alone costs ~10 ms of
// start-up). It moves bytes between ranks and never adds a float. Every wait polls, so that a job whose rank died
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
#include <thread>
#include <vector>

namespace reprun {

namespace {

// After a stop signal, a wait that makes no progress for this long means a peer is gone.
constexpr auto k_stalled = std::chrono::milliseconds(500);
// Polls of a wait before it starts yielding the core (a few tens of microseconds).
constexpr long k_spin_polls = 2000;

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
    m_yield = static_cast<unsigned>(m_size) > std::thread::hardware_concurrency();
  }

  int rank() const override { return m_rank; }
  int size() const override { return m_size; }

  int post_recv(void* buf, size_t bytes, int from, int tag) override {
    return posted(from, [&](MPI_Request* r) { return MPI_Irecv(buf, count_of(bytes), MPI_BYTE, from, tag, MPI_COMM_WORLD, r); });
  }

  int post_send(const void* buf, size_t bytes, int to, int tag) override {
    return posted(to, [&](MPI_Request* r) { return MPI_Isend(buf, count_of(bytes), MPI_BYTE, to, tag, MPI_COMM_WORLD, r); });
  }

  void wait(int id) override {
    wait(&m_requests[static_cast<size_t>(id)], 1, m_peers[static_cast<size_t>(id)]);
  }

  void wait_all() override {
    for (size_t i = 0; i < m_requests.size(); ++i) {
      wait(&m_requests[i], 1, m_peers[i]); // one by one, so that a stall names its peer
    }
    m_requests.clear();
    m_peers.clear();
  }

  void broadcast(void* buf, size_t bytes, int root) override {
    MPI_Request r;
    check(MPI_Ibcast(buf, count_of(bytes), MPI_BYTE, root, MPI_COMM_WORLD, &r), root);
    wait(&r, 1, root);
  }

  void barrier() override {
    MPI_Request r;
    check(MPI_Ibarrier(MPI_COMM_WORLD, &r), 0);
    wait(&r, 1, 0);
  }

  template <class Start> int posted(int peer, Start&& start) {
    m_requests.emplace_back();
    m_peers.push_back(peer);
    check(start(&m_requests.back()), peer);
    return static_cast<int>(m_requests.size() - 1);
  }

  // Polls until the requests complete: spins a little, as MPI's own blocking calls do (a rank
  // waits for its neighbour's next block within microseconds), then yields at every poll, so that
  // the rank it waits for can run on a busy machine; at once when the ranks outnumber the cores.
  void wait(MPI_Request* r, int n, int peer) {
    std::chrono::steady_clock::time_point stopped{};
    long polls = 0;
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
      if (m_yield || ++polls > k_spin_polls) {
        sched_yield();
      }
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
  bool m_yield = false; // more ranks than cores (on one machine, as CI runs them)
  std::vector<MPI_Request> m_requests; // posted since wait_all (a completed one is MPI_REQUEST_NULL)
  std::vector<int> m_peers;            // the rank each waits for
};

std::unique_ptr<MpiExchange> g_world;

} // namespace

} // namespace reprun

// The module's entry points, looked up by exchange_load.cpp (C names: dlsym finds them as written).
extern "C" {

// Starts MPI (MPI_Init) and returns this process's world; an Error propagates to the caller.
__attribute__((visibility("default"))) reprun::Exchange* reprun_mpi_start(const std::atomic<bool>* stop) {
  if (!reprun::g_world) {
    reprun::g_world = std::make_unique<reprun::MpiExchange>(stop);
  }
  return reprun::g_world.get();
}

// MPI_Finalize when `ok`, else MPI_Abort with `code`.
__attribute__((visibility("default"))) void reprun_mpi_finish(int ok, int code) {
  if (!reprun::g_world) {
    return;
  }
  if (ok) {
    reprun::g_world.reset();
    MPI_Finalize();
  } else {
    MPI_Abort(MPI_COMM_WORLD, code);
  }
}

} // extern "C"
