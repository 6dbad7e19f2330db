// ReadAhead: a thread that read()s a file into a ring of blocks ahead of the one reading its
// lines (StepLogReader, for `reprun diff`'s B), so that the kernel's copy of the bytes runs beside
// the comparison on another core, and with it, when asked, the XXH3 digest of every complete line
// (the integrity facts of a finished run's log) and, always, each block's LineIndex: where its
// lines end, their steps and, once asked, their losses, found where the bytes were read. Lines and
// errors stay with the reader, in file order. Private to src/record/.
#pragma once

#include "reprun/core/hash.hpp"
#include "reprun/record/steplog.hpp"

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace reprun {

class ReadAhead {
public:
  // Each block: k_headroom free bytes, then up to k_block bytes of the file. The headroom is the
  // reader's, to put the start of a line that the block goes on with right before it.
  static constexpr size_t k_headroom = 64u << 10;
  static constexpr size_t k_block = 128u << 10;
  static constexpr size_t k_slots = 8;

  // Reads `fd` (not closed here) from its current offset; with `digest`, also digests every
  // complete line it reads (all bytes up to the file's last '\n'). Throws std::system_error when
  // no thread can be started.
  ReadAhead(int fd, std::string path, bool digest);
  ~ReadAhead(); // stops the thread, even mid-file
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  struct Block {
    char* data = nullptr; // the slot: headroom, then `size` bytes of the file
    size_t size = 0;      // 0: the end of the file
    int slot = -1;
    const LineIndex* lines = nullptr; // the slot's, with it until release()
  };
  // The next block in file order, the caller's until release(); waits for it. Throws Error naming
  // the file when reading failed there.
  Block take();
  void release(int slot);
  // With `digest`: the XXH3-64 of the file's complete lines, once take() has returned its end.
  uint64_t digest();
  // From the next block the thread reads on: the losses of its lines too (a diff after the
  // divergence, where it reads two losses a line).
  void want_losses() { m_want_losses.store(true, std::memory_order_relaxed); }

private:
  void run();
  void digest_block(const char* p, size_t n); // on the thread: the complete lines, in order
  void index_block(LineIndex& index, const char* p, size_t n); // on the thread: its LineIndex

  int m_fd;
  std::string m_path;
  std::vector<char*> m_slots;
  std::mutex m_mutex;
  std::condition_variable m_wake_reader, m_wake_taker;
  std::vector<int> m_free;             // slots the thread may fill
  std::array<std::pair<int, size_t>, k_slots> m_filled; // a ring, in file order: slot, bytes
  size_t m_head = 0, m_count = 0;
  bool m_done = false, m_stop = false;
  bool m_reader_waits = false, m_taker_waits = false;
  int m_errno = 0;
  bool m_digesting;
  Xxh3Stream m_digest;   // the thread's until m_done
  std::string m_pending; // the thread's: bytes after the last '\n' read so far
  std::array<LineIndex, k_slots> m_lines;  // each slot's
  bool m_at_line_start = true;         // the thread's: the next block starts a line
  std::atomic<bool> m_want_losses{false};
  std::thread m_thread; // last: started once the rest is built
};

} // namespace reprun
