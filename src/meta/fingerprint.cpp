// File and tree hashing with a stat-keyed cache (hash_cache.hpp). See include/reprun/meta/fingerprint.hpp.
#include "reprun/meta/fingerprint.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/core/threadpool.hpp"
#include "reprun/meta/hash_cache.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fnmatch.h>
#include <string_view>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace reprun {

namespace fs = std::filesystem;

namespace {

StatKey key_of(const struct stat& st) {
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
          static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
}

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
  if (excludes.empty()) {
    return false; // and no file name taken apart for nothing, once per file
  }
  std::string name = fs::path(rel).filename().string();
  for (const auto& g : excludes) {
    if (::fnmatch(g.c_str(), rel.c_str(), 0) == 0 || ::fnmatch(g.c_str(), name.c_str(), 0) == 0) {
      return true;
    }
  }
  return false;
}

// A file to hash; `st` is its stat when the walk already took it (one stat per file).
struct Job {
  std::string abs;
  std::string rel;
  bool have_stat = false;
  struct stat st {};
};

HashResult hash_jobs(std::vector<Job> jobs, std::vector<HashEntry> links, std::vector<std::string> notes,
                     const HashOptions& opt) {
  HashCache cache(opt.use_cache ? hash_cache_file(opt) : "");
  const int64_t racy_ns = (static_cast<int64_t>(std::time(nullptr)) - 2) * 1'000'000'000;
  HashResult res;
  res.notes = std::move(notes);
  std::vector<HashEntry> files(jobs.size());
  std::vector<std::string> errors(jobs.size());
  // The cache first, on this thread: a re-hash where every file is cached starts no thread.
  std::vector<int> misses;
  for (size_t i = 0; i < jobs.size(); ++i) {
    Job& j = jobs[i];
    HashEntry& e = files[i];
    e.path = j.rel;
    e.type = "file";
    if (!j.have_stat && ::stat(j.abs.c_str(), &j.st) != 0) {
      errors[i] = Error(j.abs, std::string("cannot stat: ") + std::strerror(errno)).what();
      continue;
    }
    if (opt.use_cache && cache.lookup(key_of(j.st), e.sha256)) {
      e.size = static_cast<uint64_t>(j.st.st_size);
      e.from_cache = true;
      continue;
    }
    misses.push_back(static_cast<int>(i));
  }
  if (!misses.empty()) {
    int threads = opt.threads > 0 ? opt.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ThreadPool pool(std::min<int>(threads, static_cast<int>(misses.size())));
    res.threads = pool.size();
    std::vector<std::vector<char>> buffers(static_cast<size_t>(pool.size()), std::vector<char>(1 << 20));
    pool.parallel_for(static_cast<int>(misses.size()), [&](int m, int worker) {
      const size_t i = static_cast<size_t>(misses[static_cast<size_t>(m)]);
      HashEntry& e = files[i];
      try {
        struct stat st {};
        e.sha256 = hash_file(jobs[i].abs, st, buffers[static_cast<size_t>(worker)]);
        e.size = static_cast<uint64_t>(st.st_size);
        // A file modified within the last seconds could change again within the same timestamp
        // tick; such entries are not cached.
        if (opt.use_cache && key_of(st).mtime_ns < racy_ns) {
          cache.store(key_of(st), e.sha256);
        }
      } catch (const Error& err) {
        errors[i] = err.what();
      }
    });
  }
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
    jobs.push_back({files[i], names[i], false, {}});
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
        jobs.push_back({abs.string(), rel, true, st});
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
      jobs.push_back({abs.string(), rel, true, lst});
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
