// File and tree hashing with a stat-keyed cache. See include/reprun/fingerprint.hpp.
#include "reprun/meta/fingerprint.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/core/threadpool.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fnmatch.h>
#include <mutex>
#include <string_view>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>

namespace reprun {

namespace fs = std::filesystem;

namespace {

struct StatKey {
  uint64_t dev, ino, size;
  int64_t mtime_ns, ctime_ns;
  std::string str() const { return fmt::format("{} {} {} {} {}", dev, ino, size, mtime_ns, ctime_ns); }
};

StatKey key_of(const struct stat& st) {
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
          static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
}

// Append-only cache file: "v1 dev ino size mtime_ns ctime_ns sha256" per line. Each process
// appends its new entries with one write() (O_APPEND), so concurrent writers never interleave
// within a line; a line that does not parse (cut by a crash) is ignored. An entry is found only
// under the exact key, so it is never trusted once any key field changed.
class HashCache {
public:
  explicit HashCache(std::string path) : m_path(std::move(path)) {
    if (m_path.empty()) {
      return;
    }
    std::string text;
    try {
      text = read_file(m_path);
    } catch (const Error&) {
      return; // no cache yet, or unreadable: hash everything
    }
    size_t pos = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) {
        break;
      }
      std::string_view line(text.data() + pos, nl - pos);
      pos = nl + 1;
      if (line.size() < 3 + 64 || line.substr(0, 3) != "v1 ") {
        continue;
      }
      auto sp = line.rfind(' ');
      std::string_view digest = line.substr(sp + 1);
      if (digest.size() != 64 || digest.find_first_not_of("0123456789abcdef") != std::string_view::npos) {
        continue;
      }
      m_map[std::string(line.substr(3, sp - 3))] = std::string(digest);
    }
  }

  bool lookup(const StatKey& k, std::string& digest) {
    std::lock_guard<std::mutex> lock(m_mutex);
    auto it = m_map.find(k.str());
    if (it == m_map.end()) {
      return false;
    }
    digest = it->second;
    return true;
  }

  void store(const StatKey& k, const std::string& digest) {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_pending += "v1 " + k.str() + " " + digest + "\n";
  }

  void flush() {
    if (m_path.empty() || m_pending.empty()) {
      return;
    }
    std::error_code ec;
    fs::create_directories(fs::path(m_path).parent_path(), ec);
    int fd = ::open(m_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0) {
      return; // the cache is an optimisation: a read-only home still hashes
    }
    ssize_t n = ::write(fd, m_pending.data(), m_pending.size());
    (void)n;
    ::close(fd);
    m_pending.clear();
  }

private:
  std::string m_path;
  std::unordered_map<std::string, std::string> m_map;
  std::string m_pending;
  std::mutex m_mutex;
};

// SHA-256 of one regular file, checking that it did not change while being read.
std::string hash_file(const std::string& path, struct stat& st_out, std::vector<char>& buf) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      throw Error(path, std::string("cannot open: ") + std::strerror(errno));
    }
    struct stat before {};
    if (::fstat(fd, &before) != 0 || !S_ISREG(before.st_mode)) {
      ::close(fd);
      throw Error(path, "not a regular file");
    }
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    std::string digest;
    try {
      digest = sha256_fd(fd, path, buf);
    } catch (...) {
      ::close(fd);
      throw;
    }
    struct stat after {};
    ::fstat(fd, &after);
    ::close(fd);
    if (before.st_size == after.st_size && before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
        before.st_mtim.tv_nsec == after.st_mtim.tv_nsec) {
      st_out = after;
      return digest;
    }
  }
  throw Error(path, "changed while it was being hashed (3 attempts); hash it again when it is quiet");
}

bool excluded(const std::string& rel, const std::vector<std::string>& excludes) {
  std::string name = fs::path(rel).filename().string();
  for (const auto& g : excludes) {
    if (::fnmatch(g.c_str(), rel.c_str(), 0) == 0 || ::fnmatch(g.c_str(), name.c_str(), 0) == 0) {
      return true;
    }
  }
  return false;
}

struct Job {
  std::string abs;
  std::string rel;
};

HashResult hash_jobs(std::vector<Job> jobs, std::vector<HashEntry> links, std::vector<std::string> notes,
                     const HashOptions& opt) {
  HashCache cache(opt.use_cache ? hash_cache_file(opt) : "");
  const int64_t racy_ns = (static_cast<int64_t>(std::time(nullptr)) - 2) * 1'000'000'000;
  HashResult res;
  res.notes = std::move(notes);
  std::vector<HashEntry> files(jobs.size());
  std::vector<std::string> errors(jobs.size());
  int threads = opt.threads > 0 ? opt.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(std::min<int>(threads, std::max<int>(1, static_cast<int>(jobs.size()))));
  std::vector<std::vector<char>> buffers(static_cast<size_t>(pool.size()), std::vector<char>(1 << 20));
  pool.parallel_for(static_cast<int>(jobs.size()), [&](int i, int worker) {
    const Job& j = jobs[static_cast<size_t>(i)];
    HashEntry& e = files[static_cast<size_t>(i)];
    e.path = j.rel;
    e.type = "file";
    try {
      struct stat st {};
      if (::stat(j.abs.c_str(), &st) != 0) {
        throw Error(j.abs, std::string("cannot stat: ") + std::strerror(errno));
      }
      if (opt.use_cache && cache.lookup(key_of(st), e.sha256)) {
        e.size = static_cast<uint64_t>(st.st_size);
        e.from_cache = true;
        return;
      }
      e.sha256 = hash_file(j.abs, st, buffers[static_cast<size_t>(worker)]);
      e.size = static_cast<uint64_t>(st.st_size);
      // A file modified within the last seconds could change again within the same timestamp
      // tick; such entries are not cached.
      if (opt.use_cache && key_of(st).mtime_ns < racy_ns) {
        cache.store(key_of(st), e.sha256);
      }
    } catch (const Error& err) {
      errors[static_cast<size_t>(i)] = err.what();
    }
  });
  for (const auto& e : errors) {
    if (!e.empty()) {
      throw Error(e);
    }
  }
  cache.flush();
  for (auto& f : files) {
    res.total_bytes += f.size;
    (f.from_cache ? res.cache_hits : res.cache_misses) += 1;
    res.entries.push_back(std::move(f));
  }
  for (auto& l : links) {
    res.entries.push_back(std::move(l));
  }
  std::sort(res.entries.begin(), res.entries.end(), [](const HashEntry& a, const HashEntry& b) { return a.path < b.path; });
  for (size_t i = 1; i < res.entries.size(); ++i) {
    if (res.entries[i].path == res.entries[i - 1].path) {
      throw Error(res.entries[i].path, "given twice (two arguments with the same name)");
    }
  }
  res.root = "sha256:" + tree_root(res.entries);
  return res;
}

} // namespace

std::string hash_cache_file(const HashOptions& opt) {
  std::string dir = opt.cache_dir;
  if (dir.empty()) {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    if (xdg && *xdg == '/') {
      dir = std::string(xdg) + "/reprun";
    } else if (home && *home) {
      dir = std::string(home) + "/.cache/reprun";
    } else {
      return "";
    }
  }
  return dir + "/hash-cache-v1.log";
}

std::string tree_root(const std::vector<HashEntry>& entries, std::string* transcript) {
  Sha256 h;
  h.update_field("format", "reprun.tree/1");
  if (transcript) {
    *transcript += "format reprun.tree/1\n";
  }
  for (const auto& e : entries) {
    h.update_field("type", e.type);
    h.update_field("path", e.path);
    if (e.type == "symlink") {
      h.update_field("target", e.target);
      if (transcript) {
        *transcript += fmt::format("symlink path={:?} target={:?}\n", e.path, e.target);
      }
    } else {
      h.update_field("size", std::to_string(e.size));
      h.update_field("sha256", e.sha256);
      if (transcript) {
        *transcript += fmt::format("file path={:?} size={} sha256={}\n", e.path, e.size, e.sha256);
      }
    }
  }
  return h.hex_digest();
}

HashResult hash_files(const std::vector<std::string>& files, const std::vector<std::string>& names,
                      const HashOptions& opt) {
  std::vector<Job> jobs;
  for (size_t i = 0; i < files.size(); ++i) {
    jobs.push_back({files[i], names[i]});
  }
  return hash_jobs(std::move(jobs), {}, {}, opt);
}

HashResult hash_paths(const std::vector<std::string>& paths, const HashOptions& opt) {
  std::vector<Job> jobs;
  std::vector<HashEntry> links;
  std::vector<std::string> notes;
  bool single_dir = false;
  if (paths.size() == 1) {
    std::error_code ec;
    single_dir = fs::is_directory(fs::symlink_status(paths[0], ec)) ||
                 (opt.follow_symlinks && fs::is_directory(paths[0], ec));
  }
  auto add = [&](const fs::path& abs, const std::string& rel) {
    if (!rel.empty() && excluded(rel, opt.excludes)) {
      return;
    }
    struct stat lst {};
    if (::lstat(abs.c_str(), &lst) != 0) {
      throw Error(abs.string(), std::string("cannot stat: ") + std::strerror(errno));
    }
    if (S_ISLNK(lst.st_mode)) {
      struct stat st {};
      if (opt.follow_symlinks && ::stat(abs.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        jobs.push_back({abs.string(), rel});
        return;
      }
      std::error_code ec;
      HashEntry e;
      e.path = rel;
      e.type = "symlink";
      e.target = fs::read_symlink(abs, ec).string();
      links.push_back(e);
      return;
    }
    if (S_ISREG(lst.st_mode)) {
      jobs.push_back({abs.string(), rel});
    } else if (!S_ISDIR(lst.st_mode)) {
      const char* what = S_ISFIFO(lst.st_mode) ? "FIFO" : S_ISSOCK(lst.st_mode) ? "socket" : "device";
      notes.push_back(fmt::format("{}: skipped ({})", abs.string(), what));
    }
  };
  for (const auto& p : paths) {
    std::error_code ec;
    fs::path arg(p);
    auto st = fs::symlink_status(arg, ec);
    if (ec || !fs::exists(st)) {
      throw Error(p, "no such file or directory");
    }
    std::string base = fs::path(p).lexically_normal().filename().string();
    if (base.empty() || base == ".") {
      base = fs::absolute(p).lexically_normal().parent_path().filename().string();
    }
    bool is_dir = fs::is_directory(st) || (opt.follow_symlinks && fs::is_directory(arg, ec));
    if (!is_dir) {
      add(arg, single_dir ? arg.filename().string() : base);
      continue;
    }
    auto opts = fs::directory_options::none;
    fs::recursive_directory_iterator it(arg, opts, ec);
    if (ec) {
      throw Error(p, "cannot read directory: " + ec.message());
    }
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) {
        throw Error(it->path().string(), "cannot read directory: " + ec.message());
      }
      std::string rel = it->path().lexically_relative(arg).string();
      if (!single_dir) {
        rel = base + "/" + rel;
      }
      if (it->is_directory(ec) && !it->is_symlink(ec)) {
        if (excluded(rel, opt.excludes)) {
          it.disable_recursion_pending();
        }
        continue;
      }
      add(it->path(), rel);
    }
    if (ec) {
      throw Error(p, "cannot read directory: " + ec.message());
    }
  }
  return hash_jobs(std::move(jobs), std::move(links), std::move(notes), opt);
}

} // namespace reprun
