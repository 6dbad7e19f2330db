// RunDir: the one owner of a run directory's files. Format: include/reprun/record/run_dir.hpp and
// docs/run-format.md.
#include "reprun/record/run_dir.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/core/lines.hpp"
#include "reprun/record/steplog.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <sys/file.h>
#include <unistd.h>

namespace reprun {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

constexpr const char* k_checkpoint_dir = "checkpoints";
constexpr const char* k_artifact_dir = "artifacts";
constexpr const char* k_process_dir = "processes";
constexpr const char* k_rank_dir = "ranks";

std::string join(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).string(); }

bool exists_no_follow(const std::string& path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec));
}

// Facts of the first `limit` complete lines of the file `fd` reads (all of them when limit < 0),
// hashed into `digest`. Read in pieces, so memory does not grow with the log; a partial last line
// is not a record.
LogFacts scan_log(int fd, const std::string& path, long limit, Xxh3Stream& digest) {
  LogFacts f;
  // Not cleared: read() touches only the pages it fills (a step log of a few KB, not a MiB of
  // zeros faulted in at every run and diff).
  constexpr size_t k_buf = 1u << 20;
  const auto buf = std::make_unique_for_overwrite<char[]>(k_buf);
  std::string pending; // the start of a line that a later piece ends
  while (limit < 0 || f.records < limit) {
    const ssize_t n = ::read(fd, buf.get(), k_buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      throw Error(path, std::string("cannot read: ") + std::strerror(errno));
    }
    if (n == 0) {
      break;
    }
    const char* p = buf.get();
    const char* end = p + n;
    while (p < end && (limit < 0 || f.records < limit)) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
      if (!nl) {
        pending.append(p, end);
        break;
      }
      if (!pending.empty()) {
        digest.update(pending.data(), pending.size());
        pending.clear();
      }
      digest.update(p, static_cast<size_t>(nl + 1 - p));
      ++f.records;
      p = nl + 1;
    }
  }
  f.xxh3 = "xxh3:" + hex64(digest.digest());
  return f;
}

// scan_log of the file at `path`; a missing file has no records.
LogFacts scan_log_file(const std::string& path, long limit, Xxh3Stream& digest) {
  refuse_link(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT) {
    return {0, "xxh3:" + hex64(digest.digest())};
  }
  if (fd < 0) {
    throw Error(path, std::string("cannot open: ") + std::strerror(errno));
  }
  try {
    LogFacts f = scan_log(fd, path, limit, digest);
    ::close(fd);
    return f;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

// The facts a summary recorded for a log ("steps_log": {"records": N, "xxh3": "xxh3:..."}), or
// none when it predates them. Throws Error naming the summary when they are malformed.
std::optional<LogFacts> facts_in(const ojson& summary, const char* key, const std::string& summary_path) {
  auto it = summary.find(key);
  if (it == summary.end()) {
    return std::nullopt;
  }
  const ojson& j = *it;
  if (!j.is_object() || !j.contains("records") || !j["records"].is_number_integer() || j["records"].get<long>() < 0 ||
      !j.contains("xxh3") || !j["xxh3"].is_string()) {
    throw Error(summary_path, fmt::format("\"{}\" is not {{\"records\": N, \"xxh3\": \"xxh3:...\"}}", key));
  }
  return LogFacts{j["records"].get<long>(), j["xxh3"].get<std::string>()};
}

ojson number_or_name(double v) {
  if (std::isfinite(v)) {
    return v;
  }
  return std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity");
}

ojson optional_number(const std::optional<double>& v) { return v ? number_or_name(*v) : ojson(nullptr); }

ojson facts_json(const LogFacts& f) { return {{"records", f.records}, {"xxh3", f.xxh3}}; }

// The step of a checkpoint file name "step-NNNNNNNNN.ckpt", or -1.
long checkpoint_name_step(const std::string& name) {
  constexpr std::string_view prefix = "step-", suffix = ".ckpt";
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return -1;
  }
  std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 15 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) {
    return -1;
  }
  return std::strtol(digits.c_str(), nullptr, 10);
}

} // namespace

void write_json(const std::string& path, const ojson& j) {
  refuse_link(path);
  write_file_atomic(path, j.dump(2) + "\n");
}

ojson read_json_object(const std::string& path, const char* what) {
  try {
    ojson j = ojson::parse(read_file(path));
    if (!j.is_object()) {
      throw Error(path, fmt::format("{} is not a JSON object", what));
    }
    return j;
  } catch (const ojson::parse_error& e) {
    throw Error(path, fmt::format("corrupt {} (invalid JSON at byte {})", what, e.byte));
  }
}

RunLock lock_directory(const std::string& lock_path, const std::string& dir, const char* what) {
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) {
    throw Error(lock_path, std::string("cannot create lock file: ") + std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    throw Error(dir, fmt::format("another reprun process is writing this {} (locked)", what));
  }
  return RunLock(fd);
}

// ---- AppendLog ----------------------------------------------------------------------------------

AppendLog::AppendLog(const std::string& path) : m_path(path), m_digest(std::make_unique<Xxh3Stream>()) {
  refuse_link(path);
  m_records = scan_log_file(path, -1, *m_digest).records;
  // O_NOFOLLOW: a symlink planted in a run directory never redirects a write outside it.
  m_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (m_fd < 0) {
    throw Error(path, std::string("cannot open for writing: ") + std::strerror(errno));
  }
}

AppendLog::AppendLog(AppendLog&& o) noexcept
    : m_path(std::move(o.m_path)), m_fd(o.m_fd), m_records(o.m_records), m_digest(std::move(o.m_digest)) {
  o.m_fd = -1;
}

AppendLog::~AppendLog() {
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

void AppendLog::append(const std::string& line) {
  write_all(m_fd, line, m_path);
  m_digest->update(line.data(), line.size());
  m_records += static_cast<long>(count_newlines(line));
}

LogFacts AppendLog::facts() const { return {m_records, "xxh3:" + hex64(m_digest->digest())}; }

// ---- AtomicLog ----------------------------------------------------------------------------------

AtomicLog::AtomicLog(const std::string& path)
    : m_file(std::make_unique<AtomicFile>(path)), m_digest(std::make_unique<Xxh3Stream>()) {}

AtomicLog::~AtomicLog() = default;

void AtomicLog::write(std::string_view lines) {
  m_file->write(lines);
  m_digest->update(lines.data(), lines.size());
  m_records += static_cast<long>(count_newlines(lines));
}

LogFacts AtomicLog::commit() {
  m_file->commit();
  return {m_records, "xxh3:" + hex64(m_digest->digest())};
}

// ---- RunLock ------------------------------------------------------------------------------------

RunLock::~RunLock() {
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

// ---- RunDir -------------------------------------------------------------------------------------

const char* RunDir::name(RunFile f) {
  // In the order of enum class RunFile.
  static constexpr const char* k_names[] = {"manifest.json", "steps.jsonl", "evals.jsonl", "summary.json",
                                            ".lock",         "stdout.txt",  "stderr.txt",
                                            "capture-steps.jsonl", "framework.json", "ops.jsonl", "events.jsonl",
                                            "files.log", "py-files.log", "inputs.jsonl"};
  return k_names[static_cast<size_t>(f)];
}

bool RunDir::holds_run(const std::string& path) { return exists_no_follow(join(path, name(RunFile::manifest))); }

RunDir RunDir::create(const std::string& path) {
  if (holds_run(path)) {
    throw Error(path, "already holds a run; continue it with --resume or choose another -o");
  }
  std::error_code ec;
  fs::create_directories(fs::path(path) / k_checkpoint_dir, ec);
  if (ec) {
    throw Error(path, "cannot create run directory: " + ec.message());
  }
  return RunDir(path);
}

RunDir RunDir::create_in_new_or_empty(const std::string& path) {
  std::error_code ec;
  if (!holds_run(path) && fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path, ec)) {
      const std::string n = e.path().filename().string();
      std::error_code ec2;
      const bool leftover = n == name(RunFile::lock) ||
                            (n == k_checkpoint_dir && e.is_directory(ec2) && fs::is_empty(e.path(), ec2));
      if (!leftover) {
        throw Error(path, fmt::format("not empty and not a run directory (it holds {}); choose a new or empty "
                                      "folder for -o",
                                      n));
      }
    }
  }
  return create(path);
}

RunDir RunDir::open(const std::string& path) {
  std::string manifest = join(path, name(RunFile::manifest));
  refuse_link(manifest);
  if (!exists_no_follow(manifest)) {
    // exec's work directory (-o DIR) holds its runs: DIR/run-1, DIR/run-2.
    const bool work_dir = exists_no_follow(join(join(path, "run-1"), name(RunFile::manifest)));
    throw Error(path, fmt::format("not a run directory (no {}){}", name(RunFile::manifest),
                                  work_dir ? fmt::format("; it holds exec's runs: did you mean {}?", join(path, "run-1")) : ""));
  }
  return RunDir(path);
}

std::string RunDir::file(RunFile f) const { return join(m_path, name(f)); }

std::string RunDir::existing_file(RunFile f) const {
  std::string p = file(f);
  refuse_link(p);
  if (!exists_no_follow(p)) {
    throw Error(m_path, fmt::format("run directory has no {}", name(f)));
  }
  return p;
}

RunLock RunDir::lock() const { return lock_directory(file(RunFile::lock), m_path, "run directory"); }

void RunDir::write_manifest(const ojson& manifest) const { write_json(file(RunFile::manifest), manifest); }

ojson RunDir::read_manifest() const {
  std::string path = file(RunFile::manifest);
  refuse_link(path);
  if (!exists_no_follow(path)) {
    throw Error(m_path, fmt::format("not a run directory (no {})", name(RunFile::manifest)));
  }
  ojson m;
  try {
    m = ojson::parse(read_file(path));
  } catch (const ojson::parse_error& e) {
    throw Error(path, fmt::format("corrupt manifest (invalid JSON at byte {})", e.byte));
  }
  if (!m.is_object() || !m.contains("format")) {
    throw Error(path, "manifest has no \"format\" field");
  }
  // The keys every reader takes as strings: another type is a manifest edited by hand, named here
  // rather than as a JSON library's type error.
  for (const char* key : {"format", "kind"}) {
    if (m.contains(key) && !m[key].is_string()) {
      throw Error(path, fmt::format("{}: must be a string, not {} {}", key, m[key].is_array() || m[key].is_object() ? "an" : "a",
                                    m[key].type_name()));
    }
  }
  std::string f = m["format"].get<std::string>();
  if (f.rfind("reprun.run/", 0) != 0) {
    throw Error(path, fmt::format("unknown format '{}' (expected {})", f, k_run_format));
  }
  int v = std::atoi(f.c_str() + 11);
  if (v > k_run_format_version) {
    throw Error(path, fmt::format("format {} is newer than this reprun reads ({}); upgrade reprun", f, k_run_format));
  }
  if (v < 1) {
    throw Error(path, "unknown format '" + f + "'");
  }
  return m;
}

void RunDir::write_summary(const RunSummary& s) const {
  ojson j;
  j["format"] = k_run_format;
  j["status"] = s.status;
  if (s.exit_code) {
    j["exit_code"] = *s.exit_code;
  }
  j["steps"] = s.steps;
  if (s.total_steps) {
    j["total_steps"] = *s.total_steps;
  }
  if (s.train_loss || s.has_eval_fields) {
    j["train_loss"] = optional_number(s.train_loss);
  }
  if (s.has_eval_fields) {
    j["val_loss"] = optional_number(s.val_loss);
    j["val_accuracy"] = optional_number(s.val_accuracy);
  }
  j["wall_seconds"] = s.wall_seconds;
  if (s.steps_per_second) {
    j["steps_per_second"] = *s.steps_per_second;
  }
  if (s.gemm_seconds) {
    j["gemm_seconds"] = *s.gemm_seconds;
  }
  if (s.steps_log) {
    j["steps_log"] = facts_json(*s.steps_log);
  }
  if (s.evals_log) {
    j["evals_log"] = facts_json(*s.evals_log);
  }
  if (s.inputs_log) {
    j["inputs_log"] = facts_json(*s.inputs_log);
  }
  if (s.op_trace_log) {
    j["op_trace_log"] = facts_json(*s.op_trace_log);
  }
  if (!s.rank_logs.empty()) {
    ojson ranks = ojson::object();
    for (const auto& [r, facts] : s.rank_logs) {
      ranks[std::to_string(r)] = facts_json(facts);
    }
    j["rank_logs"] = ranks;
  }
  write_json(file(RunFile::summary), j);
}

void RunDir::mark_failed(const std::string& reason) const {
  ojson j = read_summary();
  j["format"] = k_run_format;
  j["status"] = "failed: " + reason;
  j["steps_log"] = facts_json(log_facts(RunFile::steps));
  j["evals_log"] = facts_json(log_facts(RunFile::evals));
  write_json(file(RunFile::summary), j);
}

ojson RunDir::read_summary() const {
  std::string path = file(RunFile::summary);
  refuse_link(path);
  if (!exists_no_follow(path)) {
    return ojson{{"status", fmt::format("unknown (no {})", name(RunFile::summary))}};
  }
  ojson j = read_json_object(path, "summary");
  // Every reader takes these as they are: a hand-edited value of another type is named here, not
  // met later as a type error that names no file.
  if (j.contains("status") && !j["status"].is_string()) {
    throw Error(path, fmt::format("corrupt summary: \"status\" is {}, expected a string", j["status"].dump()));
  }
  for (const char* key : {"steps", "total_steps", "exit_code"}) {
    if (j.contains(key) && !j[key].is_number_integer()) {
      throw Error(path, fmt::format("corrupt summary: \"{}\" is {}, expected an integer", key, j[key].dump()));
    }
  }
  return j;
}

AppendLog RunDir::append(RunFile log) const { return AppendLog(file(log)); }

LogFacts RunDir::log_facts(RunFile log, long limit) const {
  Xxh3Stream digest;
  return scan_log_file(file(log), limit, digest);
}

std::optional<LogFacts> RunDir::recorded_facts(const ojson& summary, RunFile log) const {
  return facts_in(summary, log == RunFile::steps ? "steps_log" : "evals_log", file(RunFile::summary));
}

long RunDir::facts_cover(const ojson& summary, const LogFacts& recorded) {
  // "running": written when the process started; later records may follow.
  return summary.value("status", "") == "running" ? recorded.records : -1;
}

void RunDir::check_facts(RunFile log, const LogFacts& want, const LogFacts& got) const {
  const std::string where = file(log);
  const char* what = log == RunFile::steps ? "step" : "evaluation";
  if (got.records < want.records) {
    throw Error(where, fmt::format("damaged: holds {} complete {} records, {} recorded {} (truncated after the run "
                                   "wrote it)",
                                   got.records, what, name(RunFile::summary), want.records));
  }
  if (got.records > want.records) {
    throw Error(where, fmt::format("damaged: holds {} complete {} records, {} recorded {} (lines were added after the "
                                   "run ended)",
                                   got.records, what, name(RunFile::summary), want.records));
  }
  if (got.xxh3 != want.xxh3) {
    throw Error(where, fmt::format("damaged: its {} {} records do not match the digest in {} ({}, now {}): the file "
                                   "was edited after the run wrote it",
                                   got.records, what, name(RunFile::summary), want.xxh3, got.xxh3));
  }
}

LogCheck RunDir::verify_logs(const ojson& summary) const {
  LogCheck check{true, ""};
  for (RunFile log : {RunFile::steps, RunFile::evals}) {
    const std::optional<LogFacts> want = recorded_facts(summary, log);
    if (!want) {
      if (log == RunFile::steps) {
        check = {false, fmt::format("{}: {} holds no integrity facts (written by an older reprun or another tool): "
                                    "the logs were not verified",
                                    m_path, name(RunFile::summary))};
      }
      continue;
    }
    check_facts(log, *want, log_facts(log, facts_cover(summary, *want)));
  }
  verify_rank_logs(summary);
  return check;
}

void RunDir::verify_rank_logs(const ojson& summary) const {
  // A data-parallel exec: every rank's log is held to its facts as rank 0's is.
  auto it = summary.find("rank_logs");
  if (it == summary.end()) {
    return;
  }
  const std::string summary_path = file(RunFile::summary);
  if (!it->is_object()) {
    throw Error(summary_path, "\"rank_logs\" is not an object of {\"<rank>\": {\"records\": N, \"xxh3\": ...}}");
  }
  for (const auto& [r, facts] : it->items()) {
    if (r.empty() || r.size() > 6 || r.find_first_not_of("0123456789") != std::string::npos) {
      throw Error(summary_path, fmt::format("\"rank_logs\": \"{}\" is not a rank number", r));
    }
    const std::optional<LogFacts> want = facts_in(*it, r.c_str(), summary_path);
    const RunDir rk = rank(std::stoi(r));
    rk.check_facts(RunFile::steps, *want, rk.log_facts(RunFile::steps, facts_cover(summary, *want)));
  }
}

void RunDir::truncate_logs_to(long step) const {
  // From the start (step 0) the step-0 line is written again, so it goes too.
  truncate_log_to_step(file(RunFile::steps), step == 0 ? -1 : step);
  truncate_log_to_step(file(RunFile::evals), step);
}

std::vector<CheckpointFile> RunDir::checkpoints() const {
  std::vector<CheckpointFile> out;
  std::error_code ec;
  fs::path dir = fs::path(m_path) / k_checkpoint_dir;
  if (fs::is_symlink(fs::symlink_status(dir, ec)) || !fs::is_directory(dir, ec)) {
    return out;
  }
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    long step = checkpoint_name_step(e.path().filename().string());
    if (step >= 0 && !e.is_symlink()) {
      out.push_back({step, e.path().string()});
    }
  }
  std::sort(out.begin(), out.end(), [](const CheckpointFile& a, const CheckpointFile& b) { return a.step > b.step; });
  return out;
}

std::string RunDir::checkpoint_path(long step) const {
  return (fs::path(m_path) / k_checkpoint_dir / fmt::format("step-{:09d}.ckpt", step)).string();
}

void RunDir::prune_checkpoints(long keep) const {
  auto list = checkpoints();
  for (size_t i = static_cast<size_t>(std::max(keep, 0L)); i < list.size(); ++i) {
    std::error_code ec;
    fs::remove(list[i].path, ec);
  }
}

void RunDir::copy_start_from(const RunDir& src, long step) const {
  if (step > 0) {
    std::string from = src.checkpoint_path(step);
    refuse_link(from);
    if (!exists_no_follow(from)) {
      throw Error(src.path(), fmt::format("has no checkpoint at step {}", step));
    }
    std::error_code ec;
    fs::create_directories(fs::path(m_path) / k_checkpoint_dir, ec);
    write_file_atomic(checkpoint_path(step), read_file(from));
  }
  for (RunFile log : {RunFile::steps, RunFile::evals}) {
    std::string from = src.file(log);
    refuse_link(from);
    if (exists_no_follow(from)) {
      write_file_atomic(file(log), read_file(from));
    }
  }
  truncate_logs_to(step);
}

std::string RunDir::artifact_path(const std::string& file_name) const {
  fs::path dir = fs::path(m_path) / k_artifact_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Error(dir.string(), "cannot create: " + ec.message());
  }
  return (dir / fs::path(file_name).filename()).string();
}

std::string RunDir::verified_op_trace() const {
  const std::string path = file(RunFile::op_trace);
  const ojson summary = read_summary();
  const auto want = facts_in(summary, "op_trace_log", file(RunFile::summary));
  if (!want) {
    return "";
  }
  refuse_link(path);
  if (!exists_no_follow(path)) {
    throw Error(path, fmt::format("missing: {} records an op trace of {} lines", name(RunFile::summary), want->records));
  }
  const LogFacts got = log_facts(RunFile::op_trace);
  if (got != *want) {
    throw Error(path, fmt::format("damaged: its {} lines do not match the digest in {} ({} lines, {}): the file was "
                                  "edited after the run wrote it",
                                  got.records, name(RunFile::summary), want->records, want->xxh3));
  }
  return path;
}

std::vector<ojson> RunDir::read_inputs() const {
  std::vector<ojson> out;
  const std::string path = file(RunFile::inputs);
  const bool present = exists_no_follow(path);
  const ojson summary = read_summary();
  const auto want = facts_in(summary, "inputs_log", file(RunFile::summary));
  if (!present) {
    if (want) { // recorded, then lost: reading it as "read nothing" would make every file a difference
      throw Error(path, fmt::format("missing: {} records {} line{} of what the program read (the run directory was "
                                    "copied or cleaned without it)",
                                    name(RunFile::summary), want->records, want->records == 1 ? "" : "s"));
    }
    return out;
  }
  refuse_link(path);
  if (want) {
    const LogFacts got = log_facts(RunFile::inputs);
    if (got != *want) {
      throw Error(path, fmt::format("damaged: its {} {} not match the digest in {} ({} records, {}): the file was "
                                    "edited after the run wrote it",
                                    got.records, got.records == 1 ? "record does" : "records do",
                                    name(RunFile::summary), want->records, want->xxh3));
    }
  }
  const std::string text = read_file(path);
  size_t pos = 0;
  long lineno = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      break;
    }
    ++lineno;
    ojson j = ojson::parse(std::string_view(text.data() + pos, nl - pos), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      throw Error(fmt::format("{}:{}", path, lineno), "not a record of what the program read");
    }
    out.push_back(std::move(j));
    pos = nl + 1;
  }
  if (pos < text.size()) { // reprun ends every record with a newline: a last line without one was cut
    throw Error(fmt::format("{}:{}", path, lineno + 1), "cut short (no end of line): the file is damaged");
  }
  return out;
}

std::string RunDir::read_code_copy(long index) const {
  const fs::path p = fs::path(m_path) / "code" / (std::to_string(index) + ".txt");
  refuse_link(p.parent_path().string()); // the folder too: a code/ linked elsewhere is not the run's
  if (index < 0 || !exists_no_follow(p.string())) {
    return "";
  }
  refuse_link(p.string());
  return read_file(p.string());
}

std::string RunDir::code_copy_path(size_t index) const {
  const fs::path dir = fs::path(m_path) / "code";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Error(dir.string(), "cannot create: " + ec.message());
  }
  return (dir / (std::to_string(index) + ".txt")).string();
}

namespace {

// `root`/`folder`/`n`, refused when either level is a symbolic link.
fs::path numbered_subfolder(const std::string& root, const char* folder, int n) {
  const fs::path dir = fs::path(root) / folder / std::to_string(n);
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(fs::path(root) / folder, ec)) || fs::is_symlink(fs::symlink_status(dir, ec))) {
    throw Error(dir.string(), "is a symbolic link; reprun never follows one inside a run directory");
  }
  return dir;
}

} // namespace

RunDir RunDir::process(int n) const {
  const fs::path dir = numbered_subfolder(m_path, k_process_dir, n);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Error(dir.string(), "cannot create: " + ec.message());
  }
  return RunDir(dir.string());
}

RunDir RunDir::rank(int r) const { return RunDir(numbered_subfolder(m_path, k_rank_dir, r).string()); }

std::string RunDir::rank_file_template(RunFile f) const {
  return (fs::path(m_path) / k_rank_dir / "{rank}" / name(f)).string();
}

namespace {
// The numbered folders under `dir` (1, 2, ...), in number order; symbolic links are left out.
std::vector<int> numbered_folders(const fs::path& dir) {
  std::vector<int> out;
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(dir, ec)) || !fs::is_directory(dir, ec)) {
    return out;
  }
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    std::error_code ec2;
    if (!n.empty() && n.size() < 6 && n.find_first_not_of("0123456789") == std::string::npos && n[0] != '0' &&
        !e.is_symlink(ec2) && e.is_directory(ec2)) {
      out.push_back(std::stoi(n));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}
} // namespace

std::vector<int> RunDir::processes() const { return numbered_folders(fs::path(m_path) / k_process_dir); }

std::vector<int> RunDir::ranks() const { return numbered_folders(fs::path(m_path) / k_rank_dir); }

// ---- free functions -----------------------------------------------------------------------------

void refuse_link(const std::string& path) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    throw Error(path, "is a symbolic link; reprun does not follow links inside a run directory");
  }
}

void truncate_log_to_step(const std::string& path, long max_step) {
  refuse_link(path);
  if (!exists_no_follow(path)) {
    return;
  }
  std::string text = read_file(path);
  size_t keep = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      break; // partial last line: dropped
    }
    long st = quick_step(std::string_view(text).substr(pos, nl - pos)); // reprun's own {"step":N,... lines
    if (st < 0 || st > max_step) {
      break;
    }
    pos = nl + 1;
    keep = pos;
  }
  if (keep != text.size()) {
    write_file_atomic(path, std::string_view(text).substr(0, keep));
  }
}

} // namespace reprun
