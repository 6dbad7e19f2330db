// A file's content summary (what inputs.jsonl keeps of a data or code file): see
// include/reprun/meta/inputs.hpp (summarize_content).
#include "reprun/meta/inputs.hpp"

#include "reprun/core/error.hpp"
#include "reprun/core/hash.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <span>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace reprun {

namespace {

constexpr uint64_t k_text_cap = 64ull << 20;   // text files up to this size get line blocks
constexpr size_t k_max_blocks = 4096;          // block sizes double until a file has no more
constexpr size_t k_tail_lines = 8192;          // the last lines digested one by one (all of a smaller file)

// Reads `path` once: its SHA-256 and its blocks.
// Each read's bytes told to `watch`; a stop set ends the reading (Error "interrupted").
void note_read(const ReadWatch& watch, const std::string& path, ssize_t got) {
  if (watch.done != nullptr && got > 0) {
    watch.done->fetch_add(static_cast<uint64_t>(got), std::memory_order_relaxed);
  }
  if (watch.stop != nullptr && watch.stop->load(std::memory_order_relaxed)) {
    throw Error(path, "interrupted while reprun read it");
  }
}

ContentSummary summarize_fd(int fd, const std::string& path, uint64_t size, const ReadWatch& watch) {
  ContentSummary s;
  s.size = size;
  Sha256 sha;
  // Sized to the file (a run may read 10,000 files of a few KB), and not zero-filled.
  const size_t buf_size = static_cast<size_t>(std::min<uint64_t>(1 << 20, std::max<uint64_t>(8192, size + 1)));
  const std::unique_ptr<char[]> buf_data(new char[buf_size]);
  const std::span<char> buf(buf_data.get(), buf_size);
  // Text: no NUL in the first 8 KiB, and small enough to count its lines.
  ssize_t got = ::pread(fd, buf.data(), std::min<size_t>(8192, buf.size()), 0);
  s.text = size <= k_text_cap && got >= 0 && std::find(buf.begin(), buf.begin() + got, '\0') == buf.begin() + got;
  if (s.text) {
    std::vector<uint64_t> line_hashes; // one per line, folded into blocks below
    std::string line;
    Xxh3Stream lh;
    bool open_line = false;
    uint64_t off = 0;
    while ((got = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(off))) > 0) {
      note_read(watch, path, got);
      sha.update(buf.data(), static_cast<size_t>(got));
      size_t start = 0;
      for (size_t i = 0; i < static_cast<size_t>(got); ++i) {
        if (buf[i] == '\n') {
          lh.update(buf.data() + start, i + 1 - start);
          line_hashes.push_back(lh.digest());
          lh.reset();
          open_line = false;
          start = i + 1;
        }
      }
      if (start < static_cast<size_t>(got)) {
        lh.update(buf.data() + start, static_cast<size_t>(got) - start);
        open_line = true;
      }
      off += static_cast<uint64_t>(got);
    }
    if (got < 0) {
      throw Error(path, "cannot read");
    }
    if (open_line) {
      line_hashes.push_back(lh.digest());
    }
    s.lines = static_cast<long>(line_hashes.size());
    s.block_lines = 64;
    while (static_cast<size_t>(s.lines) / static_cast<size_t>(s.block_lines) > k_max_blocks) {
      s.block_lines *= 2;
    }
    for (size_t b = 0; b * static_cast<size_t>(s.block_lines) < line_hashes.size(); ++b) {
      const size_t from = b * static_cast<size_t>(s.block_lines);
      const size_t to = std::min(line_hashes.size(), from + static_cast<size_t>(s.block_lines));
      s.blocks.push_back(hex64(xxh3_64(line_hashes.data() + from, (to - from) * sizeof(uint64_t))));
    }
    s.tail_from = static_cast<long>(line_hashes.size() > k_tail_lines ? line_hashes.size() - k_tail_lines : 0);
    for (size_t i = static_cast<size_t>(s.tail_from); i < line_hashes.size(); ++i) {
      s.tail.push_back(static_cast<uint32_t>(line_hashes[i]));
    }
  } else {
    s.block_bytes = 1 << 20;
    while (size / s.block_bytes > k_max_blocks) {
      s.block_bytes *= 2;
    }
    Xxh3Stream block;
    uint64_t in_block = 0, off = 0;
    while ((got = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(off))) > 0) {
      note_read(watch, path, got);
      sha.update(buf.data(), static_cast<size_t>(got));
      size_t i = 0;
      while (i < static_cast<size_t>(got)) {
        const size_t take = std::min<uint64_t>(static_cast<uint64_t>(got) - i, s.block_bytes - in_block);
        block.update(buf.data() + i, take);
        in_block += take;
        i += take;
        if (in_block == s.block_bytes) {
          s.blocks.push_back(hex64(block.digest()));
          block.reset();
          in_block = 0;
        }
      }
      off += static_cast<uint64_t>(got);
    }
    if (got < 0) {
      throw Error(path, "cannot read");
    }
    if (in_block > 0) {
      s.blocks.push_back(hex64(block.digest()));
    }
  }
  s.sha256 = sha.hex_digest();
  return s;
}

} // namespace

ContentSummary summarize_content(const std::string& path, const ReadWatch& watch) {
  // A data set is often a symbolic link to a disk elsewhere: followed. O_NONBLOCK: a FIFO put in the
  // file's place since it was looked at must not block the open (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    throw Error(path, std::string("cannot read: ") + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path, "not a regular file");
  }
  try {
    ContentSummary s = summarize_fd(fd, path, static_cast<uint64_t>(st.st_size), watch);
    ::close(fd);
    return s;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

} // namespace reprun
