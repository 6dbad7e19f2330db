// A fixed pool of worker threads for parallel_for over independent tasks. Idle workers spin for
// about 50 microseconds and then sleep on a condition variable. Determinism never depends on which worker runs which task:
// callers give every task its own output, so the thread count cannot change a bit.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace reprun {

class ThreadPool {
public:
  // threads >= 1; the calling thread is one of them. Throws Error (exit 2) when the system cannot
  // start them all (none is left running).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return m_size; }
  // Runs fn(task, worker) for task in [0, n); worker in [0, size()). Returns when all are done.
  // Tasks are handed out in increasing order to whichever worker is free.
  void parallel_for(int n, const std::function<void(int task, int worker)>& fn);

private:
  void stop_workers();
  void worker_loop(int worker);
  void run_tasks(int worker, uint64_t generation, const std::function<void(int, int)>* fn, int n);

  int m_size;
  std::vector<std::thread> m_threads;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  std::condition_variable m_done;
  const std::function<void(int, int)>* m_fn = nullptr; // guarded by m_mutex
  int m_n = 0;                                         // guarded by m_mutex
  bool m_stop = false;                                 // guarded by m_mutex
  std::atomic<uint64_t> m_generation{0};
  std::atomic<uint64_t> m_ticket{0}; // (generation << 32) | next task
  std::atomic<int> m_done_count{0};
};

} // namespace reprun
