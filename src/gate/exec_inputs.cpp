// What a program run by exec read: see exec_inputs.hpp.
#include "gate/exec_inputs.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/heap.hpp"
#include "reprun/meta/fingerprint.hpp"
#include "reprun/meta/inputs.hpp"
#include "reprun/meta/world.hpp"
#include "reprun/record/files_log.hpp"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <unistd.h>

namespace reprun {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::string find_preload_library() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    return "";
  }
  for (const fs::path& lib : {exe.parent_path() / "libreprun_preload.so",
                              exe.parent_path().parent_path() / "lib" / "reprun" / "libreprun_preload.so"}) {
    if (fs::is_regular_file(lib, ec)) {
      return fs::weakly_canonical(lib, ec).string();
    }
  }
  return "";
}

void add_recording_env(const ExecPlan& plan, const RunDir& files, std::map<std::string, std::string>& env) {
  if (!plan.opt.record_inputs) {
    return;
  }
  if (!plan.preload.empty()) {
    auto pre = env.find("LD_PRELOAD");
    env["LD_PRELOAD"] = plan.preload + (pre == env.end() || pre->second.empty() ? "" : ":" + pre->second);
    env["REPRUN_FILES_LOG"] = fs::absolute(files.file(RunFile::files_log)).string();
  }
  if (!plan.files_python_dir.empty()) {
    if (plan.capture_dir.empty()) { // --no-capture: its Python processes get the hook alone
      auto pp = env.find("PYTHONPATH");
      env["PYTHONPATH"] = plan.files_python_dir + (pp == env.end() || pp->second.empty() ? "" : ":" + pp->second);
    }
    env["REPRUN_PY_FILES_LOG"] = fs::absolute(files.file(RunFile::py_files_log)).string();
  }
}

namespace {

// The folders whose files are reprun's: recorded as "other", never inputs. (A temporary file outside the
// working directory is "other" as any file outside it is, unless the arguments name it.)
std::vector<std::string> own_dirs(const ExecPlan& plan, const RunDir& run) {
  std::vector<std::string> dirs = {fs::absolute(plan.opt.work_dir).lexically_normal().string(),
                                   fs::absolute(run.path()).lexically_normal().string()};
  if (!plan.files_python_dir.empty()) {
    dirs.push_back(plan.files_python_dir);
  }
  if (!plan.preload.empty()) {
    dirs.push_back(fs::path(plan.preload).parent_path().string());
  }
  return dirs;
}

// "512 KB", "3.2 MB", "3072 MB": the progress line's amounts.
std::string size_text(uint64_t bytes) {
  if (bytes < (1u << 20)) {
    return fmt::format("{} KB", (bytes + 1023) >> 10);
  }
  if (bytes < (100u << 20)) {
    return fmt::format("{:.1f} MB", static_cast<double>(bytes) / (1 << 20));
  }
  return fmt::format("{} MB", bytes >> 20);
}

} // namespace

ojson record_run_inputs(const ExecPlan& plan, const RunDir& run, int64_t started_ns, std::optional<LogFacts>& facts,
                        std::vector<std::string>& notes) {
  if (!plan.opt.record_inputs) {
    return nullptr;
  }
  // Every process folder's logs (a killed and resumed run has two), else the run's own.
  std::vector<RunDir> dirs;
  for (int n : run.processes()) {
    dirs.push_back(run.process(n));
  }
  if (dirs.empty()) {
    dirs.push_back(run);
  }
  // What is built from the logs takes 8 to 10 bytes for each of theirs (the bench's loader: 1.6 MB of
  // logs, 14 MB of memory): made ready in one piece (core/heap.hpp).
  uint64_t log_bytes = 0;
  for (const RunDir& d : dirs) {
    for (RunFile f : {RunFile::files_log, RunFile::py_files_log}) {
      log_bytes += files_log_bytes(d.file(f));
    }
  }
  ready_heap(log_bytes * 12);
  FilesLog log;
  for (const RunDir& d : dirs) {
    FilesLog one = read_files_log(d.file(RunFile::files_log), d.file(RunFile::py_files_log));
    if (log.events.empty() && log.py.empty() && log.skipped == 0 && log.lost == 0 && !log.unmapped) {
      log = std::move(one); // the usual case, one process folder: no copy of its 10,000s of events
      continue;
    }
    log.events.insert(log.events.end(), std::make_move_iterator(one.events.begin()), std::make_move_iterator(one.events.end()));
    log.py.insert(log.py.end(), std::make_move_iterator(one.py.begin()), std::make_move_iterator(one.py.end()));
    log.kept.insert(log.kept.end(), one.kept.begin(), one.kept.end()); // what its events view
    log.skipped += one.skipped;
    log.lost += one.lost;
    log.unmapped = log.unmapped || one.unmapped;
  }
  if (log.lost > 0) {
    notes.push_back(fmt::format("{} records of the files the program opened were lost: the log could not grow for them (a "
                                "full disk, a file-size limit, ulimit -f, or 4 GiB of records); what they name is not "
                                "recorded",
                                log.lost));
  }
  if (log.unmapped) {
    notes.push_back("a process of the program could not map the log of the files it opened (its first segment could not "
                    "be allocated or mapped): what it read is not recorded");
  }
  if (log.events.empty() && log.py.empty()) {
    if (!plan.preload.empty()) {
      notes.push_back("no process of the program loaded reprun's preload library (a statically linked program, or "
                      "one that clears LD_PRELOAD): what it read is not recorded");
    }
    return ojson{{"recorded", false}, {"why", plan.preload.empty() ? plan.preload_missing : "no process recorded"}};
  }
  InputsOptions opt;
  opt.cwd = plan.world.current_directory();
  opt.started_ns = started_ns;
  if (const std::string& prog = plan.opt.argv.at(0); prog.find('/') != std::string::npos) {
    std::error_code ec;
    if (fs::is_regular_file(prog, ec)) {
      opt.program = fs::absolute(prog).lexically_normal().string(); // ./train: a script, maybe with no .py
    }
  }
  for (size_t i = 1; i < plan.opt.argv.size(); ++i) {
    const std::string& arg = plan.opt.argv[i];
    const std::string named = arg.rfind("-", 0) == 0 && arg.find('=') != std::string::npos ? arg.substr(arg.find('=') + 1) : arg;
    std::error_code ec;
    if (!named.empty() && fs::exists(named, ec)) {
      opt.argv_paths.push_back(fs::absolute(named).lexically_normal().string());
    }
  }
  for (const auto& d : plan.opt.data_dirs) {
    opt.data_dirs.push_back(fs::absolute(d).lexically_normal().string());
  }
  for (const auto& d : plan.opt.stat_only_dirs) {
    opt.stat_only_dirs.push_back(fs::absolute(d).lexically_normal().string());
    opt.data_dirs.push_back(opt.stat_only_dirs.back()); // data too, wherever it is: by size and time only
  }
  opt.own_dirs = own_dirs(plan, run);
  opt.written_earlier = *plan.written;
  HashOptions ho;
  opt.cache_dir = fs::path(hash_cache_file(ho)).parent_path().string();
  if (::isatty(2) == 1 && plan.opt.on_note) {
    opt.progress = [&](uint64_t files_done, uint64_t files, uint64_t done, uint64_t total) {
      std::cerr << fmt::format("\rreprun exec: fingerprinting what the program read: {} of {} files, {} of {}  ",
                               files_done, files, size_text(done), size_text(total))
                << std::flush;
    };
  }
  opt.stop = plan.opt.stop;
  const InputsRecord r = record_inputs(log, opt, [&](long index, const std::string& text, bool owner_only) {
    const std::string path = run.code_copy_path(static_cast<size_t>(index));
    write_file_atomic(path, text);
    if (owner_only) {
      fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    }
  });
  if (opt.progress) {
    std::cerr << "\n";
  }
  if (r.interrupted) {
    // Ctrl-C after the program ended, while its files were read: the run is kept, its record of what
    // the program read is not (a part would compare as files "read by A only").
    for (const RunDir& d : dirs) {
      std::error_code ec;
      fs::remove(d.file(RunFile::files_log), ec);
      fs::remove(d.file(RunFile::py_files_log), ec);
    }
    return ojson{{"recorded", false}, {"why", "interrupted (Ctrl-C) while reprun fingerprinted what the program read"}};
  }
  {
    // Written as made, a quarter of a MiB at a time: 10,000 files' lines are 4 MB, memory that a
    // whole string would have the kernel map for one write.
    constexpr size_t k_chunk = 256 << 10;
    AtomicLog out(run.file(RunFile::inputs));
    std::string lines;
    lines.reserve(k_chunk + (16 << 10));
    for (const auto& f : r.files) {
      append_input_line(lines, f);
      if (lines.size() >= k_chunk) {
        out.write(lines);
        lines.clear();
      }
      if (f.written) {
        plan.written->insert(fs::path(f.path).is_absolute() ? f.path : (fs::path(opt.cwd) / f.path).string());
      }
    }
    out.write(lines);
    facts = out.commit(); // as log_facts would read them back
  }
  for (const RunDir& d : dirs) {
    std::error_code ec;
    fs::remove(d.file(RunFile::files_log), ec);
    fs::remove(d.file(RunFile::py_files_log), ec);
  }
  for (const auto& u : r.unrecorded) {
    notes.push_back(fmt::format("{} ran without reprun's preload library ({}): the files it read are not recorded",
                                u.path, u.reason == "static" ? "statically linked" : "LD_PRELOAD cleared"));
  }
  if (r.skipped_lines > 0) {
    notes.push_back(fmt::format("{} lines of the file logs were cut short (a process killed while writing): skipped",
                                r.skipped_lines));
  }
  for (const auto& f : r.files) {
    if (f.changed_while_running && (f.cls == "data" || f.cls == "code")) {
      notes.push_back(fmt::format("{} changed while the program ran (its size or time at the first open differ from "
                                  "now): its digest is of what it holds now",
                                  f.path));
    }
  }
  ojson m = inputs_manifest(r);
  if (plan.preload.empty()) {
    // Only the Python processes' audit hook recorded: say why, so that a reader knows what is missing.
    m["preload"] = plan.preload_missing + ": only the files Python processes opened are recorded";
  }
  return m;
}

} // namespace reprun
