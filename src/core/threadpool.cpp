// ThreadPool: see include/reprun/threadpool.hpp.
#include "reprun/threadpool.hpp"

namespace reprun {

ThreadPool::ThreadPool(int threads) : m_size(threads < 1 ? 1 : threads) {
  for (int w = 1; w < m_size; ++w) {
    m_threads.emplace_back([this, w] { worker_loop(w); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_all();
  for (auto& t : m_threads) {
    t.join();
  }
}

void ThreadPool::run_tasks(int worker) {
  for (;;) {
    int task;
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      if (m_next >= m_n) {
        return;
      }
      task = m_next++;
    }
    (*m_fn)(task, worker);
  }
}

void ThreadPool::worker_loop(int worker) {
  unsigned long seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(m_mutex);
      m_wake.wait(lock, [&] { return m_stop || m_generation != seen; });
      if (m_stop) {
        return;
      }
      seen = m_generation;
      ++m_active;
    }
    run_tasks(worker);
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      if (--m_active == 0) {
        m_done.notify_all();
      }
    }
  }
}

void ThreadPool::parallel_for(int n, const std::function<void(int, int)>& fn) {
  if (n <= 0) {
    return;
  }
  if (m_size == 1 || n == 1) {
    for (int i = 0; i < n; ++i) {
      fn(i, 0);
    }
    return;
  }
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_fn = &fn;
    m_n = n;
    m_next = 0;
    ++m_generation;
  }
  m_wake.notify_all();
  run_tasks(0);
  std::unique_lock<std::mutex> lock(m_mutex);
  m_done.wait(lock, [&] { return m_active == 0 && m_next >= m_n; });
  m_fn = nullptr;
}

} // namespace reprun
