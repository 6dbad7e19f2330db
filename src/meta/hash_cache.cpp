// The hash cache: an appended log and a compacted, mapped index. Format and why:
// include/reprun/meta/hash_cache.hpp.
#include "reprun/meta/hash_cache.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <string_view>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace reprun {

namespace {

constexpr char k_magic[16] = {'r', 'e', 'p', 'r', 'u', 'n', '.', 'h', 'a', 's', 'h', 'i', 'd', 'x', '/', '1'};
constexpr size_t k_header = 32; // magic, count, entry size

using Entry = HashCache::Entry;
static_assert(sizeof(Entry) == 72, "the index's entry layout");

auto full(const StatKey& k) { return std::tie(k.dev, k.ino, k.size, k.mtime_ns, k.ctime_ns); }
auto inode(const StatKey& k) { return std::tie(k.dev, k.ino); }

int nibble(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

// 64 lowercase hex digits, as reprun writes them.
bool from_hex(std::string_view hex, unsigned char* out) {
  if (hex.size() != 64) {
    return false;
  }
  for (size_t i = 0; i < 32; ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return false;
    }
    out[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  return true;
}

std::string to_hex(const unsigned char* bytes) {
  static const char* k_hex = "0123456789abcdef";
  std::string s(64, '0');
  for (size_t i = 0; i < 32; ++i) {
    s[2 * i] = k_hex[bytes[i] >> 4];
    s[2 * i + 1] = k_hex[bytes[i] & 15];
  }
  return s;
}

std::string log_line(const StatKey& k, const std::string& sha256_hex) {
  return fmt::format("v1 {} {} {} {} {} {}\n", k.dev, k.ino, k.size, k.mtime_ns, k.ctime_ns, sha256_hex);
}

// "v1 DEV INO SIZE MTIME_NS CTIME_NS SHA256HEX"; false for anything else (a cut or foreign line).
bool parse_line(std::string_view line, Entry& e) {
  if (line.substr(0, 3) != "v1 ") {
    return false;
  }
  const char* p = line.data() + 3;
  const char* end = line.data() + line.size();
  auto field = [&](auto& v) {
    const auto [q, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || q == end || *q != ' ') {
      return false;
    }
    p = q + 1;
    return true;
  };
  return field(e.key.dev) && field(e.key.ino) && field(e.key.size) && field(e.key.mtime_ns) &&
         field(e.key.ctime_ns) && from_hex(std::string_view(p, static_cast<size_t>(end - p)), e.sha256);
}

// The entries of a log file, in file order; none when it cannot be read.
std::vector<Entry> read_log(const std::string& path) {
  std::vector<Entry> out;
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error&) {
    return out; // no cache yet, or unreadable: hash everything
  }
  for (size_t pos = 0; pos < text.size();) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      break; // a line cut by a crash
    }
    Entry e{};
    if (parse_line(std::string_view(text).substr(pos, nl - pos), e)) {
      out.push_back(e);
    }
    pos = nl + 1;
  }
  return out;
}

// The index at `path` mapped read-only, or nothing (absent, foreign or cut short).
struct Mapping {
  void* map = nullptr;
  size_t size = 0;
  const Entry* entries = nullptr;
  size_t count = 0;
};

Mapping map_index(const std::string& path) {
  Mapping m;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return m;
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) >= k_header) {
    m.size = static_cast<size_t>(st.st_size);
    m.map = ::mmap(nullptr, m.size, PROT_READ, MAP_PRIVATE, fd, 0);
  }
  ::close(fd);
  if (m.map == nullptr || m.map == MAP_FAILED) {
    return {};
  }
  const char* base = static_cast<const char*>(m.map);
  uint64_t count = 0, entry_size = 0;
  std::memcpy(&count, base + 16, 8);
  std::memcpy(&entry_size, base + 24, 8);
  if (std::memcmp(base, k_magic, 16) != 0 || entry_size != sizeof(Entry) ||
      count > (m.size - k_header) / sizeof(Entry) || m.size != k_header + count * sizeof(Entry)) {
    ::munmap(m.map, m.size);
    return {};
  }
  m.entries = reinterpret_cast<const Entry*>(base + k_header);
  m.count = count;
  return m;
}

} // namespace

HashCache::HashCache(std::string log_path) : m_log_path(std::move(log_path)) {
  if (m_log_path.empty()) {
    return;
  }
  const std::string stem = m_log_path.size() > 4 && m_log_path.ends_with(".log")
                               ? m_log_path.substr(0, m_log_path.size() - 4)
                               : m_log_path;
  m_index_path = stem + ".idx";
  m_log = read_log(m_log_path);
  std::sort(m_log.begin(), m_log.end(), [](const Entry& a, const Entry& b) { return full(a.key) < full(b.key); });
  const Mapping m = map_index(m_index_path);
  m_map = m.map;
  m_map_size = m.size;
  m_index = m.entries;
  m_count = m.count;
}

HashCache::~HashCache() {
  if (m_map) {
    ::munmap(m_map, m_map_size);
  }
}

bool HashCache::lookup(const StatKey& k, std::string& sha256_hex) const {
  auto in_log = std::lower_bound(m_log.begin(), m_log.end(), k,
                                 [](const Entry& e, const StatKey& key) { return full(e.key) < full(key); });
  if (in_log != m_log.end() && in_log->key == k) {
    sha256_hex = to_hex(in_log->sha256);
    return true;
  }
  const Entry* end = m_index + m_count;
  const Entry* in_index =
      std::lower_bound(m_index, end, k, [](const Entry& e, const StatKey& key) { return inode(e.key) < inode(key); });
  if (in_index != end && in_index->key == k) {
    sha256_hex = to_hex(in_index->sha256);
    return true;
  }
  return false;
}

void HashCache::store(const StatKey& k, const std::string& sha256_hex) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_pending += log_line(k, sha256_hex);
  ++m_pending_lines;
}

void HashCache::flush() {
  if (m_log_path.empty()) {
    return;
  }
  if (!m_pending.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(m_log_path).parent_path(), ec);
    const int fd = ::open(m_log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0) {
      return; // a read-only home still hashes
    }
    const ssize_t n = ::write(fd, m_pending.data(), m_pending.size());
    (void)n;
    ::close(fd);
    m_pending.clear();
  }
  if (m_log.size() + m_pending_lines > k_compact_lines) {
    compact();
  }
  m_pending_lines = 0;
}

void HashCache::compact() {
  // One process compacts at a time; the others go on appending to a new log meanwhile.
  const int lock = ::open((m_log_path + ".compaction.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (lock < 0) {
    return;
  }
  if (::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock);
    return;
  }
  // The log is taken aside first: entries appended from now on go to a new log. An entry a
  // process appends to the old one after this is lost, which costs one hash, never a wrong one.
  const std::string taken = m_log_path + ".compacting";
  if (::rename(m_log_path.c_str(), taken.c_str()) == 0) {
    std::vector<Entry> all;
    const Mapping m = map_index(m_index_path); // the newest index, maybe another process's
    all.assign(m.entries, m.entries + m.count);
    if (m.map) {
      ::munmap(m.map, m.size);
    }
    const std::vector<Entry> log = read_log(taken);
    all.insert(all.end(), log.begin(), log.end());
    // One entry per inode, its newest state; on a tie the later (the log's, then the log's last).
    std::stable_sort(all.begin(), all.end(),
                     [](const Entry& a, const Entry& b) { return inode(a.key) < inode(b.key); });
    std::vector<Entry> kept;
    for (const Entry& e : all) {
      if (!kept.empty() && inode(kept.back().key) == inode(e.key)) {
        if (std::tie(e.key.ctime_ns, e.key.mtime_ns) >= std::tie(kept.back().key.ctime_ns, kept.back().key.mtime_ns)) {
          kept.back() = e;
        }
        continue;
      }
      kept.push_back(e);
    }
    std::string bytes(k_header + kept.size() * sizeof(Entry), '\0');
    const uint64_t count = kept.size(), entry_size = sizeof(Entry);
    std::memcpy(bytes.data(), k_magic, 16);
    std::memcpy(bytes.data() + 16, &count, 8);
    std::memcpy(bytes.data() + 24, &entry_size, 8);
    if (!kept.empty()) {
      std::memcpy(bytes.data() + k_header, kept.data(), kept.size() * sizeof(Entry));
    }
    try {
      write_file_atomic(m_index_path, bytes);
    } catch (const Error&) {
      // The cache is an optimisation: the entries taken aside are lost, the files hash again.
    }
    ::unlink(taken.c_str());
  }
  ::close(lock);
}

} // namespace reprun
