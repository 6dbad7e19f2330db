// What a program read: see include/reprun/meta/inputs.hpp.
#include "reprun/meta/inputs.hpp"

#include "meta/input_listing.hpp"
#include "meta/input_paths.hpp"
#include "meta/text_order.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/flat_index.hpp"
#include "reprun/core/threadpool.hpp"
#include "reprun/meta/content_cache.hpp"
#include "reprun/meta/redact.hpp"
#include "reprun/record/files_log.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>

namespace reprun {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

constexpr size_t k_folder_fd_min = 16;         // files read in one folder from which they are stat'd by its descriptor
constexpr size_t k_folder_fds_max = 64;        // such folders at most (the others' files by path)
// A time later than the program's start (the run directory's .lock, made just before it; the file
// system's own clock, compared strictly): what the run itself made or changed.
bool after_start(const InputsOptions& opt, int64_t mtime_ns) {
  return opt.started_ns > 0 && mtime_ns > opt.started_ns;
}

bool same_state(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
         a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

// The state an open saw (reprun.files/3), as a stat: what the content cache is keyed by.
struct stat state_at(const FileEvent& e) {
  struct stat st {};
  st.st_dev = static_cast<dev_t>(e.dev);
  st.st_ino = static_cast<ino_t>(e.ino);
  st.st_size = static_cast<off_t>(e.size);
  auto put = [](struct timespec& t, int64_t ns) {
    t.tv_sec = static_cast<time_t>(ns >= 0 ? ns / 1000000000 : -((-ns + 999999999) / 1000000000));
    t.tv_nsec = static_cast<long>(ns - static_cast<int64_t>(t.tv_sec) * 1000000000);
  };
  put(st.st_mtim, e.mtime_ns);
  put(st.st_ctim, e.ctime_ns);
  return st;
}

struct Seen {
  std::string_view key;    // its absolute path: a view of the log's, or of a module's source
  InputFile* f = nullptr;  // in the record's own list, made in this order and sorted at the end
  long first = 0;          // the index of its first event
  bool first_writes = false; // its first open that opened it wrote and did not read, or created it
  bool decided = false;      // an open that opened it has been seen (first_writes is its)
  bool ok_open = false;    // some open succeeded
  bool created = false;    // an open with O_CREAT made it
  bool made = false;       // made so under its own name (not a .pyc taken for its source)
  bool module = false;     // Python imported it
  bool image = false;      // a process ran it: its executable (a program built in the project: code)
  bool up = false;         // the program named it by a path that went up a folder (../data/t.csv)
  // Its state (device, inode, size, times) at the first open that saw it, when the log has it whole
  // (reprun.files/3), and whether every later open saw the same: its digests can then be looked up
  // in the content cache by that state, with no stat after the run.
  const FileEvent* opened = nullptr;
  bool varied = false;
};

} // namespace

bool path_under(std::string_view path, std::string_view dir) {
  if (dir.empty()) {
    return false;
  }
  if (dir.size() > 1 && dir.back() == '/') {
    dir.remove_suffix(1);
  }
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         (path[dir.size()] == '/' || dir == "/"));
}

InputsRecord record_inputs(const FilesLog& log, const InputsOptions& opt,
                           const std::function<void(long index, const std::string& text, bool owner_only)>& keep_code) {
  InputsRecord r;
  r.skipped_lines = log.skipped;
  std::unordered_map<long, std::string> exe_of; // pid -> its executable's name
  // By absolute path: views of the log's paths (`log` outlives the map), or of `sources` (a module's
  // source for its .pyc). A file's strings are made once, not at each of its events. The files in
  // the order first seen, in one block (each pass below reads them in a row, as the memory
  // prefetches them: not a hash table's nodes one by one); room for one a log event, so that a
  // Seen* stays valid.
  std::vector<Seen> files;
  files.reserve(log.events.size() + log.py.size());
  r.files.reserve(files.capacity()); // each Seen's InputFile: made in place, never moved until the end
  FlatIndex seen(files.capacity());
  const auto key_at = [&](size_t place) { return files[place].key; };
  std::deque<std::string> sources;
  long n = 0;
  std::vector<std::string> prefixes;
  for (const auto& e : log.py) {
    if (e.event == "prefix") {
      prefixes.push_back(e.path);
    }
  }
  // Each Python process's (a DataLoader's workers: the same few): each looked for once per path.
  std::sort(prefixes.begin(), prefixes.end());
  prefixes.erase(std::unique(prefixes.begin(), prefixes.end()), prefixes.end());
  // `by` opened it: a process's executable, with the program's line `where` when one is known.
  auto note_open = [&](std::string_view raw, bool folder, bool reads, bool writes, bool ok, bool created,
                       const FileEvent* fe, std::string_view by, std::string_view where) {
    std::string_view path = raw;
    if (!folder && raw.ends_with(".pyc")) {
      if (std::string src = source_of_pyc(std::string(raw)); !src.empty()) {
        path = sources.emplace_back(std::move(src)); // a module read from its .pyc: its source is the code
      }
    }
    auto opened_by = [&] {
      std::string o(by);
      if (!where.empty()) {
        o.reserve(by.size() + where.size() + 3);
        o.append(" (").append(where).append(")");
      }
      return o;
    };
    const auto [place, added] = seen.find_or_add(path, files.size(), key_at);
    if (added) {
      Seen& made = files.emplace_back();
      made.key = path;
      made.f = &r.files.emplace_back();
    }
    Seen& s = files[place];
    if (added) {
      s.first = n;
      s.f->folder = folder;
      s.f->opened_by = opened_by();
      if (fe) {
        s.f->size = fe->size;
        s.f->mtime_ns = fe->mtime_ns;
      }
    } else if (!where.empty() && s.f->opened_by.find('(') == std::string::npos) {
      s.f->opened_by = opened_by(); // the Python line that opened it says more than the process's name
    }
    if (fe != nullptr && ok && path.data() == raw.data() && fe->ctime_ns != 0) { // not a .pyc taken for its source
      if (s.opened == nullptr) {
        s.opened = fe;
      } else if (fe->dev != s.opened->dev || fe->ino != s.opened->ino || fe->size != s.opened->size ||
                 fe->mtime_ns != s.opened->mtime_ns || fe->ctime_ns != s.opened->ctime_ns) {
        s.varied = true;
      }
    }
    s.f->folder = s.f->folder || folder; // opened first, then listed (os.fwalk: open, then fdopendir)
    s.f->read = s.f->read || reads;
    s.f->written = s.f->written || writes;
    s.ok_open = s.ok_open || ok;
    s.created = s.created || created;
    s.made = s.made || (created && path == raw);
    if (ok && !s.decided) {
      // The first open that opened something says whether the run read the file before writing it:
      // an open that failed read nothing (a linker that tries its output O_RDWR, then creates it).
      s.decided = true;
      s.first_writes = created || (writes && !reads);
    }
    ++n;
    return &s;
  };
  // A Python process armed the audit hook, which records the listings the program asked for with its
  // line; the folders its import system lists (sys.path) are the interpreter's, not the program's.
  const bool preloaded = std::any_of(log.events.begin(), log.events.end(), [](const FileEvent& e) { return e.event == 'S'; });
  std::set<long> python_pids;
  for (const auto& e : log.py) {
    python_pids.insert(e.pid);
  }
  std::map<std::string, bool> python_listed; // a Python process's listings: whether each succeeded
  auto exe = [&, pid = -1L, name = std::string()](long p, const char* none) mutable -> const std::string& {
    if (p != pid) {
      const auto it = exe_of.find(p);
      pid = p;
      name = it != exe_of.end() ? it->second : none[0] != '\0' ? std::string(none) : "pid " + std::to_string(p);
    }
    return name;
  };
  for (const auto& e : log.events) {
    if (e.event == 'D' && python_pids.count(e.pid)) {
      bool& ok = python_listed.try_emplace(std::string(e.path)).first->second;
      ok = ok || e.b >= 0;
      continue;
    }
    if (e.event == 'S') {
      ++r.processes;
      exe_of[e.pid] = fs::path(e.path).filename().string();
      exe(-1, ""); // forget the last pid's name: it may be this one's
      // The executable itself, when it is not the system's (a tool built in the project: ./prep,
      // which the kernel reads, no open does): classified as any file read.
      if (!e.path.empty() && e.path[0] == '/' && !system_own_path(e.path)) {
        note_open(e.path, false, true, false, true, false, &e, exe(e.pid, ""), "")->image = true;
      }
    } else if (e.event == 'X') {
      if (e.reason != "ok") {
        const std::string exe_path(e.path);
        (system_probe(exe_path) ? r.probes : r.unrecorded).push_back({exe_path, std::string(e.reason)});
      }
    } else if (e.event == 'O' || e.event == 'D') {
      // A listing is opendir's or fdopendir's (D): a folder opened only for the files under it
      // (open(dir, O_DIRECTORY), then openat) or to sync it is no listing, and not an input.
      const bool dir = e.event == 'D';
      const int acc = static_cast<int>(e.a & O_ACCMODE);
      const bool reads = dir || acc == O_RDONLY || acc == O_RDWR;
      const bool writes = !dir && (acc == O_WRONLY || acc == O_RDWR);
      const bool created = (e.a & k_open_created) != 0;
      // A Python process's open, with the line the preload library's hook in C handed it, or the
      // import system's (a module's source or .pyc).
      const bool imported = e.where == "import";
      Seen* s = note_open(e.path, dir, reads, writes || created, e.b >= 0, created, &e, exe(e.pid, ""),
                          imported ? std::string_view() : std::string_view(e.where));
      s->module = s->module || imported;
      s->up = s->up || e.up;
    }
  }
  exe(-1, "");
  for (const auto& e : log.py) {
    if (e.event == "open" || e.event == "listdir") {
      const bool writes = e.mode.find_first_of("wax+") != std::string::npos;
      const bool reads = e.event == "listdir" || e.mode.empty() || e.mode.find_first_of("r+") != std::string::npos;
      // Python's audit event comes before the open: whether it succeeded, the preload library's record
      // says (without it, as when LD_PRELOAD could not carry it, the open is taken as made).
      const auto listed = python_listed.find(e.path);
      const bool ok = e.event == "listdir" && listed != python_listed.end() ? listed->second : !preloaded;
      Seen* s = note_open(e.path, e.event == "listdir", reads, writes, ok, false, nullptr, exe(e.pid, "python"), e.where);
      s->up = s->up || e.up;
    } else if (e.event == "module") {
      note_open(e.path, false, true, false, true, false, nullptr, "import", "")->module = true;
    }
  }
  for (Seen& s : files) {
    s.f->path = s.key;
  }
  // Classify.
  auto under_any = [](std::string_view p, const std::vector<std::string>& dirs) {
    return std::any_of(dirs.begin(), dirs.end(), [&](const std::string& d) { return path_under(p, d); });
  };
  // Named in the arguments: `reprun exec`'s own, and those of the program's processes (a wrapper
  // script's child given a data file by path: A records), less what is too broad to name data in a
  // child's arguments: the system's own folders (/usr, /etc, /proc: `uname`, `ldconfig` and the
  // like are run with them), the interpreter's or reprun's, a folder that holds the working
  // directory ("/", a home folder), and what the run itself made before it named it (a temporary
  // folder handed to a compiler: torch.compile's). Looked up by each path's folders: a child may
  // name thousands (`sort a b c ...`).
  std::unordered_set<std::string_view> named_set;
  auto name = [&](std::string_view p) {
    while (p.size() > 1 && p.back() == '/') {
      p.remove_suffix(1); // "data/"
    }
    named_set.insert(p);
  };
  for (const auto& p : opt.argv_paths) {
    name(p);
  }
  // The programs started: exec's own and each a process exec'd. One the program read is a script,
  // code whatever its name ("train" with a "#!" line), when it starts as one.
  std::unordered_set<std::string_view> programs;
  if (!opt.program.empty()) {
    programs.insert(opt.program);
  }
  for (const auto& e : log.events) {
    if (e.event == 'X' && !e.path.empty() && e.path[0] == '/') {
      programs.insert(e.path);
    }
  }
  for (const auto& e : log.events) {
    // Nor a tool's own files, which its scripts hand each other (pyenv's shims run
    // ~/.pyenv/libexec/pyenv-exec with ~/.pyenv/version): what lies in a hidden folder outside the
    // working directory, and a script some process started.
    if (e.event == 'A' && !e.path.empty() && e.path[0] == '/' && !after_start(opt, e.mtime_ns) && !system_own_path(e.path) &&
        !under_any(e.path, prefixes) && !under_any(e.path, opt.own_dirs) && !path_under(opt.cwd, e.path) &&
        !(hidden_component(e.path) && !path_under(e.path, opt.cwd)) && programs.count(e.path) == 0) {
      name(e.path);
    }
  }
  auto named_in_args = [&](std::string_view p) {
    for (;;) {
      if (named_set.count(p) > 0) {
        return true;
      }
      if (p.size() <= 1) {
        return false;
      }
      p = parent_of(p);
    }
  };
  // A symbolic link in a place of data that the program resolved (Path("data/t.csv").resolve(),
  // os.path.realpath) names its target as data, as an argument would: the program then opens the
  // target by its own path, outside the working directory. Not a link of the interpreter's or
  // reprun's, nor a target that is the system's own, the interpreter's, or holds the working
  // directory.
  // A hidden folder (.git/, .venv/) in the part of the path below the working directory's length.
  auto hidden_below_cwd = [&](std::string_view p) { return hidden_component(p.substr(std::min(p.size(), opt.cwd.size()))); };
  std::deque<std::string> targets;
  for (const auto& e : log.events) {
    if (e.event != 'L' || e.path.empty() || e.path[0] != '/' || under_any(e.path, prefixes) || under_any(e.path, opt.own_dirs)) {
      continue;
    }
    const bool in_cwd = path_under(e.path, opt.cwd) && !hidden_below_cwd(e.path);
    if (!in_cwd && !under_any(e.path, opt.data_dirs) && !named_in_args(e.path)) {
      continue;
    }
    std::string target = e.where[0] == '/' ? std::string(e.where) : std::string(parent_of(e.path)).append("/").append(e.where);
    target = fs::path(target).lexically_normal().string();
    if (!system_own_path(target) && !under_any(target, prefixes) && !under_any(target, opt.own_dirs) &&
        !path_under(opt.cwd, target)) {
      name(targets.emplace_back(std::move(target)));
    }
  }
  std::unordered_set<std::string_view> made_in; // the folders of the files the run made
  // The names of the files the run read in each folder, as they were before it (not made by it).
  std::unordered_map<std::string_view, std::vector<std::string_view>> read_in;
  for (const Seen& s : files) {
    const std::string_view path = s.key;
    if (s.created) {
      made_in.insert(parent_of(path));
    }
    if (!s.f->folder && s.f->read && s.ok_open && !s.created && path.size() > 1) {
      const std::string_view dir = parent_of(path);
      read_in[dir].push_back(path.substr(dir.size() == 1 ? 1 : dir.size() + 1));
    }
  }
  // Where each file lies (reprun's folders, an interpreter's, a data folder, a --stat-only one,
  // named in the arguments), now that every name is known: an absolute path lies under a folder
  // when it is that folder or its own folder lies under it (path_under's rule), so each folder's
  // answer is kept (10,000 files of one folder: one look at its path, not 10,000).
  struct Places {
    bool own = false, interpreter = false, data_dir = false, stat_only = false, named = false;
  };
  auto places_here = [&](std::string_view p) {
    return Places{under_any(p, opt.own_dirs), under_any(p, prefixes), under_any(p, opt.data_dirs),
                  under_any(p, opt.stat_only_dirs), named_in_args(p)};
  };
  auto is_any = [](std::string_view p, const std::vector<std::string>& dirs) {
    return std::any_of(dirs.begin(), dirs.end(), [&](std::string_view d) {
      if (d.size() > 1 && d.back() == '/') {
        d.remove_suffix(1); // as path_under
      }
      return !d.empty() && p == d;
    });
  };
  std::unordered_map<std::string_view, Places> folder_places;
  auto places_of = [&](std::string_view p) {
    if (p.size() <= 1 || p[0] != '/') {
      return places_here(p);
    }
    const auto [it, added] = folder_places.try_emplace(parent_of(p));
    if (added) {
      it->second = places_here(it->first);
    }
    Places r = it->second;
    r.own = r.own || is_any(p, opt.own_dirs);
    r.interpreter = r.interpreter || is_any(p, prefixes);
    r.data_dir = r.data_dir || is_any(p, opt.data_dirs);
    r.stat_only = r.stat_only || is_any(p, opt.stat_only_dirs);
    r.named = r.named || named_set.count(p) > 0;
    return r;
  };
  std::vector<Seen*> to_hash, to_leave, to_leave_stat;
  for (Seen& s : files) {
    const std::string_view path = s.key;
    InputFile& f = *s.f;
    f.existed = s.ok_open && !s.created;
    const Places places = places_of(path);
    const bool named = places.named;
    const bool own = places.own;
    const bool interpreter = places.interpreter;
    // A path the program gave going up from its folder (../data/t.csv, run from proj/src) names the
    // project's data as one under the working directory does; not the system's own, nor a hidden
    // folder beside the working directory's (../.cache).
    const bool up_data = s.up && !system_own_path(path) && !hidden_beside(path, opt.cwd);
    const bool data_place = (path_under(path, opt.cwd) || named || places.data_dir || up_data) &&
                            !own && !interpreter && !(hidden_below_cwd(path) && !named);
    if (own || interpreter || kernel_path(path)) {
      f.cls = "other"; // reprun's own files, the interpreter's, devices and the kernel's (/dev/null written)
    } else if ((s.first_writes && (!s.module || s.made)) || opt.written_earlier.count(s.f->path)) {
      // A module counts as written only when the run made the module's own file (torch.compile's
      // kernels, built and then imported): a .pyc written beside a source is not the source.
      f.cls = "written";
    } else if (!data_place && !(s.module && !system_own_path(path) && !hidden_component(path))) {
      f.cls = "other"; // a module imported from outside the system's folders is code: ../lib, /var/lib/jenkins/...
    } else if (!f.folder &&
               (is_code_name(path) || s.module || s.image ||
                (programs.count(path) > 0 && s.f->read && is_script(std::string(path)))) &&
               (s.module || data_place)) {
      f.cls = "code";
    } else if (data_place) {
      f.cls = "data";
    } else {
      f.cls = "other";
    }
    if ((f.cls == "data" || f.cls == "code") && !f.folder && f.existed) {
      f.stat_only = places.stat_only;
      to_hash.push_back(&s);
    }
    if (f.cls == "written" && !f.folder && data_place) {
      f.stat_only = places.stat_only; // its size and time only
      to_leave.push_back(&s); // what the run made there, which a later run may read (a cache, a download)
    } else if (f.cls == "written" && !f.folder) {
      // Elsewhere (a library's cache in ~/.cache: Hugging Face's datasets), its size and time: a later
      // run that reads it as it was left read what this run made, not other bytes.
      to_leave_stat.push_back(&s);
    }
    if (f.folder && f.cls == "data") {
      // Only a folder that holds a file the run made or one of reprun's folders has entries to leave
      // out: the others' are not looked up one by one.
      const bool check = made_in.count(path) > 0 ||
                         std::any_of(opt.own_dirs.begin(), opt.own_dirs.end(), [&](const std::string& d) {
                           std::string_view dir = d; // "-o out/" names the folder "out"
                           while (dir.size() > 1 && dir.back() == '/') {
                             dir.remove_suffix(1);
                           }
                           return parent_of(dir) == path;
                         });
      const auto here = read_in.find(path);
      list_folder(
          f, opt.cache_dir, check,
          [&](const std::string& entry) {
            // Listed after the run: what the run made there (its outputs, reprun's work folder) was
            // not what it listed.
            const long w = seen.find(entry, key_at);
            return under_any(entry, opt.own_dirs) || (w >= 0 && files[static_cast<size_t>(w)].created);
          },
          here != read_in.end() ? &here->second : nullptr);
    }
  }
  // What the run made in a place of data, as it left it (LeftFile): its state now, and its content
  // for the first files in path order up to k_left_hash_total bytes and k_left_hash_files files in
  // all, k_left_hash_cap each (a run that unpacks a large data set has it read whole only when a
  // later run reads it).
  std::sort(to_leave.begin(), to_leave.end(), [](const Seen* a, const Seen* b) { return a->f->path < b->f->path; });
  std::vector<std::pair<Seen*, struct stat>> left_to_hash;
  uint64_t left_bytes = 0;
  auto leave = [](Seen* s, struct stat& st) { // its size and time now, when it is still a regular file
    if (::stat(s->f->path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return false;
    }
    auto left = std::make_shared<LeftFile>();
    left->size = static_cast<uint64_t>(st.st_size);
    left->mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    s->f->left = std::move(left);
    return true;
  };
  for (Seen* s : to_leave) {
    struct stat st {};
    if (leave(s, st) && !s->f->stat_only && s->f->left->size <= k_left_hash_cap &&
        left_bytes + s->f->left->size <= k_left_hash_total && left_to_hash.size() < k_left_hash_files) {
      left_bytes += s->f->left->size;
      left_to_hash.emplace_back(s, st);
    }
  }
  for (Seen* s : to_leave_stat) {
    struct stat st {};
    leave(s, st);
  }
  // Fingerprint what counts, in parallel; a file is read once.
  uint64_t total = left_bytes;
  for (const Seen* s : to_hash) {
    total += s->f->size;
  }
  // The progress line's counts: bytes of the files done, and each worker's bytes read so far in the
  // file it is reading (a large file moves the line too); files done. Counted only with a line to show.
  const size_t jobs = to_hash.size() + left_to_hash.size();
  const int threads = opt.threads > 0 ? opt.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int workers = std::min<int>(threads, std::max<int>(1, static_cast<int>(jobs)));
  std::atomic<uint64_t> done{0}, files_done{0};
  const std::unique_ptr<std::atomic<uint64_t>[]> reading(new std::atomic<uint64_t>[static_cast<size_t>(workers)]());
  auto count_done = [&](uint64_t bytes, int worker) {
    if (opt.progress) {
      done.fetch_add(bytes, std::memory_order_relaxed);
      files_done.fetch_add(1, std::memory_order_relaxed);
      reading[static_cast<size_t>(worker)].store(0, std::memory_order_relaxed);
    }
  };
  auto watch_for = [&](int worker) {
    return ReadWatch{opt.progress ? &reading[static_cast<size_t>(worker)] : nullptr, opt.stop};
  };
  std::atomic<bool> finished{false};
  std::thread progress;
  if (opt.progress) {
    progress = std::thread([&] {
      auto next = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (!finished.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (std::chrono::steady_clock::now() >= next && !finished.load()) {
          uint64_t now = done.load();
          for (int w = 0; w < workers; ++w) {
            now += reading[static_cast<size_t>(w)].load();
          }
          opt.progress(files_done.load(), jobs, std::min(now, total), total);
          next += std::chrono::seconds(1);
        }
      }
    });
  }
  // Files whose state is unchanged since an earlier record: their summary from the content cache
  // (content_cache.hpp), in the hash cache's folder; the large by inode, the small by folder.
  const std::string& cache_dir = opt.cache_dir;
  FolderCache folders(cache_dir);
  {
    std::set<std::string, std::less<>> names; // a string made per folder, not per file
    auto add = [&](std::string_view dir) {
      if (names.find(dir) == names.end()) {
        names.emplace(dir);
      }
    };
    for (const Seen* s : to_hash) {
      if (!s->f->stat_only) {
        add(parent_of(s->f->path));
      }
    }
    for (const auto& [s, st] : left_to_hash) {
      add(parent_of(s->f->path));
    }
    folders.load(std::vector<std::string>(names.begin(), names.end()));
  }
  // The summary of `path` in the state `st`: from the cache, or read (and kept in the cache when the
  // file did not change while it was read). Throws Error naming an unreadable file.
  auto cached = [&](const std::string& path, const struct stat& st, ContentSummary& out) {
    return static_cast<uint64_t>(st.st_size) < k_content_cache_min ? folders.lookup(parent_of(path), st, out)
                                                                    : content_cache_lookup(cache_dir, st, out);
  };
  auto fingerprint = [&](const std::string& path, const struct stat& st, ContentSummary& out, const ReadWatch& watch) {
    if (cached(path, st, out)) {
      return;
    }
    const bool small = static_cast<uint64_t>(st.st_size) < k_content_cache_min;
    const std::string_view folder = small ? parent_of(path) : std::string_view();
    out = summarize_content(path, watch);
    struct stat after {};
    if (::stat(path.c_str(), &after) == 0 && same_state(st, after)) { // unchanged while it was read
      if (small) {
        folders.store(std::string(folder), st, out);
      } else {
        content_cache_store(cache_dir, st, out);
      }
    }
  };
  // A folder of many files read (a data set of small files): each stat'd from the folder's descriptor,
  // not by a walk of its whole path.
  std::unordered_map<std::string_view, int> folder_fds;
  {
    std::unordered_map<std::string_view, size_t> per_folder;
    for (const Seen* s : to_hash) {
      ++per_folder[parent_of(s->f->path)];
    }
    std::vector<std::pair<size_t, std::string_view>> many; // the folders of most files first
    for (const auto& [folder, count] : per_folder) {
      if (count >= k_folder_fd_min) {
        many.emplace_back(count, folder);
      }
    }
    std::sort(many.begin(), many.end(), std::greater<>());
    many.resize(std::min(many.size(), k_folder_fds_max)); // descriptors left for the files read below
    for (const auto& [count, folder] : many) {
      const int fd = ::open(std::string(folder).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (fd >= 0) {
        folder_fds.emplace(folder, fd);
      }
    }
  }
  auto stat_now = [&](const std::string& path, struct stat& st) {
    const std::string_view folder = parent_of(path);
    const auto d = folder.size() > 1 ? folder_fds.find(folder) : folder_fds.end();
    return d != folder_fds.end() ? ::fstatat(d->second, path.c_str() + folder.size() + 1, &st, 0)
                                 : ::stat(path.c_str(), &st);
  };
  ThreadPool pool(workers);
  pool.parallel_for(static_cast<int>(jobs), [&](int i, int worker) {
    if (opt.stop != nullptr && opt.stop->load(std::memory_order_relaxed)) {
      return; // interrupted: the record is not whole, and says so
    }
    if (static_cast<size_t>(i) >= to_hash.size()) {
      const auto& [s, st] = left_to_hash[static_cast<size_t>(i) - to_hash.size()];
      auto left = std::make_shared<LeftFile>(*s->f->left);
      try {
        fingerprint(s->f->path, st, left->content, watch_for(worker));
        left->hashed = true;
        s->f->left = std::move(left);
      } catch (const Error&) {
        // gone or unreadable since: its size and time say what can be said
      }
      count_done(st.st_size, worker);
      return;
    }
    const Seen& s = *to_hash[static_cast<size_t>(i)];
    InputFile& f = *to_hash[static_cast<size_t>(i)]->f;
    // A file every open saw in one state that the content cache knows, which the run did not write:
    // its digests as it was opened, with no stat now (10,000 small files: a third of the work after
    // the run). A change after its last open is then not seen: what the program read is recorded.
    if (s.opened != nullptr && !s.varied && !f.written && !f.stat_only &&
        cached(f.path, state_at(*s.opened), f.content)) {
      f.hashed = true;
      count_done(f.size, worker);
      return;
    }
    struct stat st {};
    if (stat_now(f.path, st) != 0) {
      f.note = "gone before reprun read it (removed after the run)";
      return;
    }
    if (S_ISDIR(st.st_mode)) { // opened, never listed (a folder synced, or the base of openat): not an input
      f.cls = "other";
      f.note = "a folder, opened but not listed";
      return;
    }
    if (!S_ISREG(st.st_mode)) {
      f.note = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "not a regular file";
      return;
    }
    const int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    f.changed_while_running = f.mtime_ns != 0 && (static_cast<uint64_t>(st.st_size) != f.size || mtime != f.mtime_ns);
    if (f.changed_while_running && f.written) {
      // Read, then rewritten (a history the program appends to): the state it was left in, by which
      // a later run that reads it is matched (its content is the record's own, of this state).
      auto left = std::make_shared<LeftFile>();
      left->size = static_cast<uint64_t>(st.st_size);
      left->mtime_ns = mtime;
      f.left = std::move(left);
    }
    if (f.stat_only) {
      f.size = static_cast<uint64_t>(st.st_size);
      count_done(f.size, worker);
      return;
    }
    try {
      fingerprint(f.path, st, f.content, watch_for(worker));
      f.hashed = true;
    } catch (const Error& e) {
      f.note = e.what();
    }
    count_done(f.size, worker);
  });
  for (const auto& [folder, fd] : folder_fds) {
    ::close(fd);
  }
  folders.flush();
  finished = true;
  if (progress.joinable()) {
    progress.join();
  }
  if (opt.stop != nullptr && opt.stop->load()) {
    InputsRecord cut;
    cut.interrupted = true;
    return cut;
  }
  // Code, and configuration files among the data: keep their text, for a diff to show the changed
  // lines (numbered in the order of the paths).
  std::vector<Seen*> code;
  for (Seen& s : files) {
    const bool config = s.f->cls == "data" && s.f->content.text && s.f->content.size <= k_config_copy_cap && is_config_name(s.key);
    // Text only: a program or library built in the project (ELF) is code whose lines say nothing.
    if ((s.f->cls == "code" || config) && s.f->hashed && s.f->content.text && s.f->content.size <= opt.code_cap && keep_code) {
      code.push_back(&s);
    }
  }
  std::sort(code.begin(), code.end(), [](const Seen* a, const Seen* b) { return a->f->path < b->f->path; });
  long code_index = 0;
  for (Seen* s : code) {
    try {
      // The copy with credentials' values redacted, and readable by its owner alone when the file
      // is not readable by others (a 0600 creds.ini).
      struct stat st {};
      const bool owner_only = ::stat(s->f->path.c_str(), &st) == 0 && (st.st_mode & S_IROTH) == 0;
      keep_code(code_index, redact_secret_values(read_file(s->f->path)), owner_only);
      s->f->code_copy = code_index++;
    } catch (const Error&) {
    }
  }
  // By path, relative to the working directory when under it.
  // A file the run read that had changed since the program started (its time at the first open) was
  // made during the run: a cache written under another name and then renamed (Hugging Face's
  // datasets), which a later run may read instead of what this one read to make it. The file
  // system's clock ticks coarsely: a file changed in the tick the run started is not counted.
  for (Seen& s : files) {
    make_relative(s.f->path, opt.cwd);
    s.f->first_open = s.first;
    s.f->made_during_run = !s.f->folder && s.f->existed && s.f->cls != "written" && after_start(opt, s.f->mtime_ns) &&
                          !kernel_path(s.key);
  }
  // By path, relative to the working directory when under it: r.files put in that order where they
  // lie, each moved once (a cycle of the permutation at a time).
  permute(r.files, text_order(r.files.size(), [&](size_t i) { return std::string_view(r.files[i].path); }));
  return r;
}

} // namespace reprun
