// The content cache of exec's input record: see include/reprun/meta/content_cache.hpp.
#include "reprun/meta/content_cache.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/core/lines.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <set>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace reprun {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_magic = "reprun.inputs-cache/1";

int64_t ns(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec; }

std::string entry_name(const struct stat& st) {
  return fmt::format("{}-{}", static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino));
}

std::string key_line(const struct stat& st) {
  return fmt::format("{} {} {} {} {} {}", k_magic, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                     static_cast<uint64_t>(st.st_size), ns(st.st_mtim), ns(st.st_ctim));
}

} // namespace

bool content_cache_lookup(const std::string& dir, const struct stat& st, ContentSummary& out) {
  if (dir.empty() || static_cast<uint64_t>(st.st_size) < k_content_cache_min) {
    return false;
  }
  try {
    const std::string text = read_file(dir + "/inputs-v1/" + entry_name(st));
    const size_t eol = text.find('\n');
    if (eol == std::string::npos || text.compare(0, eol, key_line(st)) != 0) {
      return false; // another state of the inode, or another format
    }
    ContentSummary c = content_from_json(nlohmann::ordered_json::parse(text.begin() + static_cast<long>(eol) + 1,
                                                                       text.end()));
    if (c.size != static_cast<uint64_t>(st.st_size) || c.sha256.size() != 64 || c.blocks.empty()) {
      return false;
    }
    out = std::move(c);
    return true;
  } catch (const std::exception&) { // none yet, unreadable, cut: a miss
    return false;
  }
}

void content_cache_store(const std::string& dir, const struct stat& st, const ContentSummary& c) {
  if (dir.empty() || static_cast<uint64_t>(st.st_size) < k_content_cache_min) {
    return;
  }
  const int64_t racy_ns = (static_cast<int64_t>(std::time(nullptr)) - 2) * 1'000'000'000;
  if (ns(st.st_mtim) >= racy_ns) { // as the hash cache (fingerprint.cpp)
    return;
  }
  write_inputs_cache_file(dir, entry_name(st), key_line(st) + "\n" + content_json(c).dump() + "\n");
}

void write_inputs_cache_file(const std::string& dir, const std::string& name, std::string_view text) {
  try {
    std::error_code ec;
    fs::create_directories(dir + "/inputs-v1", ec);
    write_file_atomic(dir + "/inputs-v1/" + name, text);
  } catch (const std::exception&) { // a cache that cannot be written is no cache
  }
}

// ---- FolderCache ------------------------------------------------------------------------------

namespace {

constexpr const char* k_folder_magic = "reprun.inputs-folder/1 ";

std::string folder_name(const std::string& folder) { return "folder-" + hex64(xxh3_64(folder.data(), folder.size())); }

// "DEV INO SIZE MTIME_NS CTIME_NS" into `buf`, as a view of it (a lookup per file read: no allocation).
std::string_view folder_key(const struct stat& st, std::array<char, 112>& buf) {
  char* p = buf.data();
  char* const end = buf.data() + buf.size();
  auto put = [&](auto v, bool space) {
    p = std::to_chars(p, end, v).ptr;
    if (space) {
      *p++ = ' ';
    }
  };
  put(static_cast<uint64_t>(st.st_dev), true);
  put(static_cast<uint64_t>(st.st_ino), true);
  put(static_cast<uint64_t>(st.st_size), true);
  put(ns(st.st_mtim), true);
  put(ns(st.st_ctim), false);
  return {buf.data(), static_cast<size_t>(p - buf.data())};
}

std::string folder_key(const struct stat& st) {
  std::array<char, 112> buf{};
  return std::string(folder_key(st, buf));
}

// The (dev, ino) a key starts with.
std::pair<uint64_t, uint64_t> inode_of(std::string_view key) {
  uint64_t dev = 0, ino = 0;
  const char* end = key.data() + key.size();
  auto r = std::from_chars(key.data(), end, dev);
  if (r.ptr < end) {
    std::from_chars(r.ptr + 1, end, ino);
  }
  return {dev, ino};
}

// The next space-separated field of `v` from `at`.
std::string_view field(std::string_view v, size_t& at) {
  const size_t end = std::min(v.find(' ', at), v.size());
  const std::string_view f = v.substr(std::min(at, v.size()), end - std::min(at, v.size()));
  at = end + 1;
  return f;
}

template <class T> bool number(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

bool hex_digits(std::string_view s) {
  static constexpr auto k_hex = [] {
    std::array<bool, 256> t{};
    for (int c = '0'; c <= '9'; ++c) {
      t[static_cast<size_t>(c)] = true;
    }
    for (int c = 'a'; c <= 'f'; ++c) {
      t[static_cast<size_t>(c)] = true;
    }
    return t;
  }();
  bool ok = true;
  for (const char c : s) { // no early exit: a loop the compiler can run wide
    ok &= k_hex[static_cast<unsigned char>(c)];
  }
  return ok;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    out += s;
  }
  return out.empty() ? "-" : out;
}

// The regular file at `path` mapped read-only; null when it is absent, unreadable, empty or not a
// regular file.
std::unique_ptr<const MappedFile> map_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return nullptr;
  }
  struct stat st {};
  std::unique_ptr<const MappedFile> map;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    map = MappedFile::map(fd, static_cast<size_t>(st.st_size));
  }
  ::close(fd);
  return map;
}

} // namespace

std::string FolderCache::encode(const ContentSummary& c) {
  if (!c.text) {
    return fmt::format("b {} {} {}", c.sha256, c.block_bytes, joined(c.blocks));
  }
  std::string tail;
  tail.reserve(c.tail.size() * 8);
  for (uint32_t v : c.tail) {
    fmt::format_to(std::back_inserter(tail), "{:08x}", v);
  }
  return fmt::format("t {} {} {} {} {} {}", c.sha256, c.lines, c.block_lines, c.tail_from, joined(c.blocks),
                     tail.empty() ? "-" : tail);
}

bool FolderCache::decode(std::string_view line, uint64_t size, ContentSummary& out) {
  ContentSummary c;
  c.size = size;
  size_t at = 0;
  const std::string_view kind = field(line, at);
  const std::string_view sha = field(line, at);
  if (sha.size() != 64 || !hex_digits(sha) || (kind != "b" && kind != "t")) {
    return false;
  }
  c.sha256 = std::string(sha);
  c.text = kind == "t";
  std::string_view blocks;
  if (c.text) {
    if (!number(field(line, at), c.lines) || !number(field(line, at), c.block_lines) ||
        !number(field(line, at), c.tail_from)) {
      return false;
    }
    blocks = field(line, at);
    const std::string_view tail = field(line, at);
    if (tail != "-") {
      if (tail.size() % 8 != 0 || !hex_digits(tail)) {
        return false;
      }
      for (size_t i = 0; i < tail.size(); i += 8) {
        uint32_t v = 0;
        std::from_chars(tail.data() + i, tail.data() + i + 8, v, 16);
        c.tail.push_back(v);
      }
    }
  } else {
    if (!number(field(line, at), c.block_bytes)) {
      return false;
    }
    blocks = field(line, at);
  }
  if (at <= line.size()) {
    return false; // more fields than the format has
  }
  if (blocks != "-") {
    if (blocks.size() % 16 != 0 || !hex_digits(blocks)) {
      return false;
    }
    c.blocks.reserve(blocks.size() / 16);
    for (size_t i = 0; i < blocks.size(); i += 16) {
      c.blocks.emplace_back(blocks.substr(i, 16));
    }
  }
  out = std::move(c);
  return true;
}

void FolderCache::load(const std::vector<std::string>& folders) {
  if (m_dir.empty()) {
    return;
  }
  for (const auto& folder : folders) {
    Folder& f = m_folders[folder];
    f.text = map_file(m_dir + "/inputs-v1/" + folder_name(folder));
    if (!f.text) {
      continue; // none yet, unreadable, empty: no entries
    }
    const std::string_view v = f.text->text();
    size_t eol = v.find('\n');
    if (eol == std::string_view::npos || v.substr(0, eol) != std::string(k_folder_magic) + folder) {
      continue; // another format, or another folder's file under the same name
    }
    const size_t lines = count_newlines(v.substr(eol + 1));
    f.entries.reserve(lines);
    f.index = std::make_unique<FlatIndex>(lines);
    const auto key_at = [&](size_t place) { return f.entries[place].key; };
    for (size_t at = eol + 1; at < v.size(); at = eol + 1) {
      eol = v.find('\n', at);
      if (eol == std::string_view::npos) {
        break; // a cut last line
      }
      const std::string_view line = v.substr(at, eol - at);
      size_t sp = 0;
      for (int i = 0; i < 5 && sp != std::string_view::npos; ++i) {
        sp = line.find(' ', i == 0 ? 0 : sp + 1);
      }
      // A key met again: its first line stands, as the file was written (one line per inode).
      if (sp != std::string_view::npos && f.index->find_or_add(line.substr(0, sp), f.entries.size(), key_at).second) {
        f.entries.push_back(Entry{line.substr(0, sp), line.substr(sp + 1)});
      }
    }
    f.hit = std::make_unique<std::atomic<bool>[]>(f.entries.size()); // value-initialized: false
  }
}

bool FolderCache::lookup(std::string_view folder, const struct stat& st, ContentSummary& out) {
  const auto f = m_folders.find(folder);
  if (f == m_folders.end()) {
    return false;
  }
  const Folder& d = f->second;
  if (!d.index) {
    return false; // no entries
  }
  std::array<char, 112> key{};
  const long e = d.index->find(folder_key(st, key), [&](size_t place) { return d.entries[place].key; });
  if (e < 0 || !decode(d.entries[static_cast<size_t>(e)].line, static_cast<uint64_t>(st.st_size), out)) {
    return false;
  }
  d.hit[static_cast<size_t>(e)].store(true, std::memory_order_relaxed);
  return true;
}

void FolderCache::store(const std::string& folder, const struct stat& st, const ContentSummary& c) {
  const int64_t racy_ns = (static_cast<int64_t>(std::time(nullptr)) - 2) * 1'000'000'000;
  if (m_dir.empty() || c.size != static_cast<uint64_t>(st.st_size) || ns(st.st_mtim) >= racy_ns) {
    return;
  }
  std::string line = encode(c);
  const std::lock_guard<std::mutex> lock(m_mutex);
  const auto f = m_folders.find(folder);
  if (f != m_folders.end()) {
    f->second.added.emplace_back(folder_key(st), std::move(line));
  }
}

void FolderCache::flush() {
  for (auto& [folder, f] : m_folders) {
    if (f.added.empty()) {
      continue;
    }
    std::string text = k_folder_magic + folder + "\n";
    std::set<std::pair<uint64_t, uint64_t>> written; // one entry per inode: its newest state
    for (const auto& [key, line] : f.added) {
      if (written.insert(inode_of(key)).second) {
        text.append(key).append(" ").append(line).append("\n");
      }
    }
    // Then the entries this run found (still valid), then others while there is room.
    size_t hits = 0;
    for (size_t i = 0; i < f.entries.size(); ++i) {
      hits += f.hit[i].load(std::memory_order_relaxed) ? 1 : 0;
    }
    const size_t cap = 2 * (f.added.size() + hits) + 1024;
    for (const bool found : {true, false}) {
      for (size_t i = 0; i < f.entries.size(); ++i) {
        const Entry& e = f.entries[i];
        if (!found && written.size() >= cap) {
          break;
        }
        if (f.hit[i].load(std::memory_order_relaxed) == found && written.insert(inode_of(e.key)).second) {
          text.append(e.key).append(" ").append(e.line).append("\n");
        }
      }
    }
    write_inputs_cache_file(m_dir, folder_name(folder), text);
  }
}

} // namespace reprun
