// A fixed pool of worker threads for parallel_for over independent tasks. Idle workers sleep on a
// condition variable (no spinning). Determinism never depends on which worker runs which task:
// callers give every task its own output, so the thread count cannot change a bit.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace reprun {

class ThreadPool {
public:
  explicit ThreadPool(int threads); // threads >= 1; the calling thread is one of them
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return m_size; }
  // Runs fn(task, worker) for task in [0, n); worker in [0, size()). Returns when all are done.
  // Tasks are handed out in increasing order to whichever worker is free.
  void parallel_for(int n, const std::function<void(int task, int worker)>& fn);

private:
  void worker_loop(int worker);
  void run_tasks(int worker);

  int m_size;
  std::vector<std::thread> m_threads;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  std::condition_variable m_done;
  const std::function<void(int, int)>* m_fn = nullptr;
  int m_n = 0;
  int m_next = 0;
  int m_active = 0;
  unsigned long m_generation = 0;
  bool m_stop = false;
};

} // namespace reprun
