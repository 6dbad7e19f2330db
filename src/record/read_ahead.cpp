// ReadAhead: see read_ahead.hpp.
#include "read_ahead.hpp"

#include "line_index.hpp"

#include "reprun/core/error.hpp"
#include "reprun/record/steplog.hpp"

#include <cerrno>
#include <cstring>
#include <new>
#include <unistd.h>

namespace reprun {

namespace {
constexpr std::align_val_t k_align{4096}; // read() copies a tenth faster to a page-aligned buffer
} // namespace

ReadAhead::ReadAhead(int fd, std::string path, bool digest)
    : m_fd(fd), m_path(std::move(path)), m_digesting(digest) {
  for (size_t i = 0; i < k_slots; ++i) {
    m_slots.push_back(static_cast<char*>(::operator new[](k_headroom + k_block, k_align)));
    m_free.push_back(static_cast<int>(i));
  }
  try {
    m_thread = std::thread([this] { run(); });
  } catch (...) {
    for (char* s : m_slots) {
      ::operator delete[](s, k_align);
    }
    throw;
  }
}

ReadAhead::~ReadAhead() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop = true;
  }
  m_wake_reader.notify_one();
  m_thread.join();
  for (char* s : m_slots) {
    ::operator delete[](s, k_align);
  }
}

void ReadAhead::run() {
  for (;;) {
    int slot = -1;
    {
      std::unique_lock<std::mutex> lock(m_mutex);
      if (m_free.empty()) {
        // Ahead by the whole ring: sleep until half of it is free, not at every block given back.
        m_reader_waits = true;
        m_wake_reader.wait(lock, [&] { return m_stop || m_free.size() >= k_slots / 2; });
        m_reader_waits = false;
      }
      if (m_stop) {
        return;
      }
      slot = m_free.back();
      m_free.pop_back();
    }
    ssize_t n = 0;
    do {
      n = ::read(m_fd, m_slots[static_cast<size_t>(slot)] + k_headroom, k_block);
    } while (n < 0 && errno == EINTR);
    const int error = n < 0 ? errno : 0;
    if (n > 0) {
      const char* bytes = m_slots[static_cast<size_t>(slot)] + k_headroom;
      if (m_digesting) {
        digest_block(bytes, static_cast<size_t>(n));
      }
      index_block(m_lines[static_cast<size_t>(slot)], bytes, static_cast<size_t>(n));
    }
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      if (n > 0) {
        m_filled[(m_head + m_count++) % k_slots] = {slot, static_cast<size_t>(n)};
      } else {
        m_free.push_back(slot);
        m_done = true;
        m_errno = error;
      }
      wake = m_taker_waits && (m_count >= k_slots / 2 || m_done);
    }
    if (wake) {
      m_wake_taker.notify_one();
    }
    if (n <= 0) {
      return;
    }
  }
}

ReadAhead::Block ReadAhead::take() {
  std::unique_lock<std::mutex> lock(m_mutex);
  if (m_count == 0 && !m_done) {
    // Caught up with the thread: sleep until half of the ring is filled, so that the two wake
    // each other once per four blocks at most, not at every block.
    m_taker_waits = true;
    m_wake_taker.wait(lock, [&] { return m_count >= k_slots / 2 || m_done; });
    m_taker_waits = false;
  }
  if (m_count > 0) {
    const auto [slot, size] = m_filled[m_head];
    m_head = (m_head + 1) % k_slots;
    --m_count;
    return {m_slots[static_cast<size_t>(slot)], size, slot, &m_lines[static_cast<size_t>(slot)]};
  }
  if (m_errno != 0) {
    throw Error(m_path, std::string("cannot read: ") + std::strerror(m_errno));
  }
  return {};
}

void ReadAhead::digest_block(const char* p, size_t n) {
  const void* last = ::memrchr(p, '\n', n);
  if (!last) {
    m_pending.append(p, n); // a line longer than the block: not complete yet
    return;
  }
  const size_t upto = static_cast<size_t>(static_cast<const char*>(last) - p) + 1;
  if (!m_pending.empty()) {
    m_digest.update(m_pending.data(), m_pending.size());
    m_pending.clear();
  }
  m_digest.update(p, upto);
  m_pending.assign(p + upto, n - upto);
}

void ReadAhead::index_block(LineIndex& index, const char* p, size_t n) {
  index_lines(index, p, n, m_at_line_start, m_want_losses.load(std::memory_order_relaxed));
  m_at_line_start = p[n - 1] == '\n';
}

uint64_t ReadAhead::digest() {
  std::lock_guard<std::mutex> lock(m_mutex); // m_done was set after the last update
  return m_digest.digest();
}

void ReadAhead::release(int slot) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_free.push_back(slot);
    wake = m_reader_waits && m_free.size() >= k_slots / 2;
  }
  if (wake) {
    m_wake_reader.notify_one();
  }
}

} // namespace reprun
