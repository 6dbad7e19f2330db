// The hash cache of `reprun hash` and of a training run's data fingerprint: which SHA-256 a file
// had when its (device, inode, size, mtime, ctime) were these. An entry is found only under the
// exact key, so it is never trusted once any of them changed. It is an optimisation only: an
// unreadable, cut or foreign cache file is a miss, never an error.
//
// Two files in the cache folder:
//   hash-cache-v1.log   text, appended: "v1 DEV INO SIZE MTIME_NS CTIME_NS SHA256HEX\n" per entry;
//                       each process appends its new entries with one write() (O_APPEND), so
//                       concurrent writers never interleave within a line; a line that does not
//                       parse (cut by a crash) is ignored. The format of every reprun so far.
//   hash-cache-v1.idx   binary, rewritten whole: a 32-byte header, "reprun.hashidx/1" then the
//                       entry count and the entry size (72) as native uint64, then the entries
//                       sorted by (dev, ino): dev, ino, size (uint64), mtime_ns, ctime_ns (int64),
//                       the 32 bytes of the SHA-256. Native byte order: the cache never leaves
//                       its machine. Another magic, size or a short file: ignored (no index).
// Why an index: the log was parsed whole by every run, so a re-hash of 1,000 cached files took
// 0.95 s behind 200,000 entries of other trees where the files alone took 0.03 s. Now a run reads
// the log, which compaction keeps short, and looks its files up in the index by binary search
// through a mapping, so it touches only the pages that hold them. Compaction (when the log passes
// k_compact_lines) folds the log into the index, keeping one entry per (dev, ino): the newest
// (by ctime, then mtime), since an inode's older states can never match again.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace reprun {

struct StatKey {
  uint64_t dev = 0, ino = 0, size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const StatKey&) const = default;
};

class HashCache {
public:
  // Compaction starts when the log holds more entries than this.
  static constexpr size_t k_compact_lines = 2048;

  // The cache whose log is `log_path` (the index beside it, ".idx" for ".log"); "" is no cache:
  // every lookup misses and nothing is kept.
  explicit HashCache(std::string log_path);
  ~HashCache();
  HashCache(const HashCache&) = delete;
  HashCache& operator=(const HashCache&) = delete;

  // The SHA-256 (hex) of a file in exactly the state `k`, or false.
  bool lookup(const StatKey& k, std::string& sha256_hex) const;
  // Kept for flush(); safe to call from several threads.
  void store(const StatKey& k, const std::string& sha256_hex);
  // Appends the stored entries to the log (one write), and compacts the log into the index once
  // it holds more than k_compact_lines entries (unless another process is compacting it).
  void flush();

  // For tests: the entries of the index and of the log as this object read them.
  size_t index_entries() const { return m_count; }
  size_t log_entries() const { return m_log.size(); }

  struct Entry {
    StatKey key;
    unsigned char sha256[32];
  };

private:
  void compact();

  std::string m_log_path, m_index_path;
  std::vector<Entry> m_log; // sorted by key
  const Entry* m_index = nullptr; // m_count entries in the mapping
  size_t m_count = 0;
  void* m_map = nullptr;
  size_t m_map_size = 0;
  std::string m_pending; // log lines of store()
  size_t m_pending_lines = 0;
  std::mutex m_mutex;
};

} // namespace reprun
