// ThreadPool: see include/reprun/threadpool.hpp.
//
// Tasks are handed out through one atomic ticket, (generation << 32) | next task index: a worker
// takes task i of generation g only with a compare-exchange on exactly that value, so a worker
// that woke late for an old parallel_for can never run a task (or call a function) of a newer one.
// After a parallel_for a worker spins briefly (about 50 microseconds, yielding) for the next one,
// because a training step issues dozens back to back, and then sleeps on a condition variable: an
// idle pool costs no CPU.
#include "reprun/core/threadpool.hpp"

#include "reprun/core/error.hpp"

#include <chrono>
#include <string>
#include <system_error>

namespace reprun {

namespace {
constexpr auto k_spin = std::chrono::microseconds(50);
}

ThreadPool::ThreadPool(int threads) : m_size(threads < 1 ? 1 : threads) {
  try {
    for (int w = 1; w < m_size; ++w) {
      m_threads.emplace_back([this, w] { worker_loop(w); });
    }
  } catch (const std::system_error& e) {
    const size_t started = m_threads.size() + 1;
    stop_workers();
    throw Error("determinism.threads", "cannot start " + std::to_string(m_size) + " threads (the system allowed " +
                               std::to_string(started) + "): " + e.what() + "; use fewer threads");
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_all();
  for (auto& t : m_threads) {
    t.join();
  }
}

void ThreadPool::run_tasks(int worker, uint64_t generation, const std::function<void(int, int)>* fn, int n) {
  for (;;) {
    uint64_t t = m_ticket.load(std::memory_order_acquire);
    if ((t >> 32) != generation || static_cast<int>(t & 0xffffffffu) >= n) {
      return;
    }
    if (!m_ticket.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel)) {
      continue;
    }
    (*fn)(static_cast<int>(t & 0xffffffffu), worker);
    if (m_done_count.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_done.notify_all();
    }
  }
}

void ThreadPool::worker_loop(int worker) {
  uint64_t seen = 0;
  for (;;) {
    const auto until = std::chrono::steady_clock::now() + k_spin;
    while (m_generation.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    uint64_t generation;
    const std::function<void(int, int)>* fn;
    int n;
    {
      std::unique_lock<std::mutex> lock(m_mutex);
      m_wake.wait(lock, [&] { return m_stop || m_generation.load() != seen; });
      if (m_stop) {
        return;
      }
      generation = m_generation.load();
      fn = m_fn;
      n = m_n;
    }
    seen = generation;
    run_tasks(worker, generation, fn, n);
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
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    generation = m_generation.load() + 1;
    m_fn = &fn;
    m_n = n;
    m_done_count.store(0, std::memory_order_release);
    m_ticket.store(generation << 32, std::memory_order_release);
    m_generation.store(generation, std::memory_order_release);
  }
  m_wake.notify_all();
  run_tasks(0, generation, &fn, n);
  if (m_done_count.load(std::memory_order_acquire) < n) {
    std::unique_lock<std::mutex> lock(m_mutex);
    m_done.wait(lock, [&] { return m_done_count.load(std::memory_order_acquire) >= n; });
  }
}

} // namespace reprun
