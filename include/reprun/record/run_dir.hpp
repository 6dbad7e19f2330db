// The run directory, format "reprun.run/1" (docs/run-format.md). RunDir is the one owner of its
// files: nothing outside src/record/ builds a path from their names.
//   manifest.json   everything that can change a result; the layers above assemble its content,
//                   RunDir writes it (atomically) and reads it back (format checked)
//   steps.jsonl     one line per optimizer step (step_record.hpp), appended as the run goes
//   evals.jsonl     validation metrics
//   summary.json    status, final metrics and the logs' integrity facts; rewritten atomically
//   checkpoints/    step-NNNNNNNNN.ckpt (checkpoint_file.hpp)
//   .lock           held (flock) by the one process writing the run
//   stdout.txt, stderr.txt, artifacts/    what a program run by `reprun exec` left
//   events.jsonl    exec: the torch.save and torch.load calls of a program, and the state at its
//                   resume boundary (one JSON line each, written by reprun_capture)
//   inputs.jsonl    exec: every file the program's processes opened, one JSON line each (meta/inputs.hpp);
//                   files.log and py-files.log are the raw logs it is made from, removed once it is
//   code/           exec: the text of the program's code files (capped), for a diff to show changed lines
//   processes/N/    exec --vary resume: the files of the run's N-th process (1 killed, 2 resumed),
//                   each a folder with the per-process files above (capture-steps.jsonl,
//                   framework.json, events.jsonl, stdout.txt, stderr.txt)
// Lines of the logs are written with one write() each, so a crash leaves at most one partial last
// line, which readers ignore. Files of a run directory are used only when they are not symbolic
// links: reprun never follows a run directory's contents outside it.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace reprun {

class AtomicFile;
class Xxh3Stream;

inline constexpr const char* k_run_format = "reprun.run/1";
inline constexpr int k_run_format_version = 1;

// capture_steps and framework_facts are written by reprun_capture inside a Python program run by
// `reprun exec` (the automatic step log and the framework facts; exec moves them into steps.jsonl
// and the manifest); op_trace is a replay's op trace (docs/run-format.md).
enum class RunFile {
  manifest, steps, evals, summary, lock, stdout_log, stderr_log, capture_steps, framework_facts, op_trace, events,
  files_log, py_files_log, inputs
};

// Integrity facts of a log: its complete records and the XXH3-64 of their bytes ("xxh3:<hex>",
// each line with its '\n'; a partial last line is not a record). Recorded in summary.json at the
// end of every process that wrote the run, so a damaged log can be told from a short run.
struct LogFacts {
  long records = 0;
  std::string xxh3;
  bool operator==(const LogFacts&) const = default;
};

// summary.json. Written by RunDir::write_summary only; keys appear in this order, the optional
// ones only when set.
struct RunSummary {
  std::string status;            // running | complete | interrupted | failed: <reason>
  std::optional<int> exit_code;  // exec: the program's exit status
  long steps = 0;                // step records done (train: the last step reached)
  std::optional<long> total_steps;
  std::optional<double> train_loss; // loss of the last step; null when none is known
  // train: the last evaluation; both null without a validation split
  bool has_eval_fields = false;
  std::optional<double> val_loss, val_accuracy;
  double wall_seconds = 0.0;
  std::optional<double> steps_per_second;
  std::optional<double> gemm_seconds; // train on the CPU: the loop's wall time in the matrix products
  std::optional<LogFacts> steps_log, evals_log;
  std::optional<LogFacts> inputs_log; // exec: inputs.jsonl, what the program read
  std::optional<LogFacts> op_trace_log; // exec --trace-steps: ops.jsonl, the op trace of the first steps
  // exec of a data-parallel program: the step log of each rank but rank 0 (whose log is the run's
  // steps.jsonl), by rank; written only when the program ran more than one rank.
  std::map<int, LogFacts> rank_logs;
};

// What RunDir::verify_logs found: the logs match the summary's facts, or the summary holds none
// (a run older than the facts), said in `note`. A damaged log is an Error, not a LogCheck.
struct LogCheck {
  bool verified = false;
  std::string note;
};

// An append-only log with its integrity facts kept current: one write() per line.
class AppendLog {
public:
  // Opens (creating) `path`; the facts start from the complete lines already there.
  explicit AppendLog(const std::string& path);
  ~AppendLog();
  AppendLog(AppendLog&&) noexcept;
  AppendLog& operator=(AppendLog&&) = delete;
  AppendLog(const AppendLog&) = delete;
  void append(const std::string& line); // one or more complete lines
  LogFacts facts() const;

private:
  std::string m_path;
  int m_fd = -1;
  long m_records = 0;
  std::unique_ptr<Xxh3Stream> m_digest;
};

// A log that reprun writes whole after the fact (exec's inputs.jsonl): through an AtomicFile
// (core/atomic_file.hpp: in place at commit, or not at all), its facts taken from the bytes as they
// are written, the same as log_facts would read back from the file.
class AtomicLog {
public:
  explicit AtomicLog(const std::string& path);
  ~AtomicLog();
  AtomicLog(const AtomicLog&) = delete;
  AtomicLog& operator=(const AtomicLog&) = delete;
  void write(std::string_view lines); // complete lines, each ending with '\n'
  LogFacts commit();

private:
  std::unique_ptr<AtomicFile> m_file;
  long m_records = 0;
  std::unique_ptr<Xxh3Stream> m_digest;
};

// Exclusive lock on a run directory, held until destroyed. Throws Error when another process
// holds it.
class RunLock {
public:
  RunLock(RunLock&& other) noexcept : m_fd(other.m_fd) { other.m_fd = -1; }
  RunLock& operator=(RunLock&&) = delete;
  RunLock(const RunLock&) = delete;
  ~RunLock();

private:
  friend RunLock lock_directory(const std::string& lock_path, const std::string& dir, const char* what);
  explicit RunLock(int fd) : m_fd(fd) {}
  int m_fd = -1;
};

struct CheckpointFile {
  long step = 0;
  std::string path;
};

class RunDir {
public:
  // A new run directory at `path` (created with its checkpoints/ folder). Throws Error when it
  // already holds a run, or cannot be created.
  static RunDir create(const std::string& path);
  // create() for a path the user named (train -o): also refuses an existing folder that holds
  // anything but what a run that never started leaves (.lock, an empty checkpoints/), so that no
  // file of the user's is overwritten or mixed into a run.
  static RunDir create_in_new_or_empty(const std::string& path);
  // An existing run directory. Throws Error naming `path` when it holds no manifest.
  static RunDir open(const std::string& path);
  // True when `path` is a directory holding a manifest.
  static bool holds_run(const std::string& path);
  // The file name of `f` ("steps.jsonl"), for messages.
  static const char* name(RunFile f);

  const std::string& path() const { return m_path; }
  // Path of one of the run's files (not created here).
  std::string file(RunFile f) const;
  // The same, checked: exists, and is not a symbolic link. Throws Error naming the file.
  std::string existing_file(RunFile f) const;

  RunLock lock() const;

  void write_manifest(const nlohmann::ordered_json& manifest) const;
  // Reads and checks the manifest (JSON, format version); throws Error naming the file.
  nlohmann::ordered_json read_manifest() const;
  void write_summary(const RunSummary& s) const;
  // For a run whose writing process was killed (an MPI rank died): the summary's status becomes
  // "failed: <reason>" and its log facts those of the logs as they are; the rest stays.
  void mark_failed(const std::string& reason) const;
  // summary.json as written, or {"status": "unknown (no summary.json)"} when absent.
  nlohmann::ordered_json read_summary() const;

  AppendLog append(RunFile log) const; // steps or evals
  // Facts of a log as it is on disk now, of its first `limit` records (all when limit < 0); a
  // missing log has none: 0 records.
  LogFacts log_facts(RunFile log, long limit = -1) const;
  // Checks steps.jsonl and evals.jsonl against the facts in `summary` (as read_summary returns
  // it). A summary written when its process ended (complete, interrupted, failed) must describe
  // each log exactly; one that still says "running" (the process was killed, or is still
  // writing) was written at its start, so its records must be the log's first ones. Throws Error
  // naming the damaged file and what is wrong (exit 2): a damaged run is not a divergence.
  LogCheck verify_logs(const nlohmann::ordered_json& summary) const;
  // The part of verify_logs for a data-parallel exec's rank logs (summary.json's "rank_logs"):
  // each held to its facts as steps.jsonl is. Nothing to do without them.
  void verify_rank_logs(const nlohmann::ordered_json& summary) const;
  // verify_logs in its parts, for a reader that reads a log anyway (diff digests steps.jsonl as it
  // compares it, StepLogReader::digest_lines): the facts `summary` recorded for `log` (none in a
  // summary older than them; throws Error naming summary.json when they are malformed), how many
  // of the log's first records they cover (-1: all, once the run ended; a "running" run's recorded
  // ones), and the check of the facts read, `got`, which throws verify_logs' "damaged" Error.
  std::optional<LogFacts> recorded_facts(const nlohmann::ordered_json& summary, RunFile log) const;
  static long facts_cover(const nlohmann::ordered_json& summary, const LogFacts& recorded);
  void check_facts(RunFile log, const LogFacts& recorded, const LogFacts& got) const;
  // Back to the state right after checkpoint `step`: the logs keep their lines up to that step
  // (step 0, the start: steps.jsonl keeps nothing, as the step-0 line is written again).
  void truncate_logs_to(long step) const;

  // Checkpoint files, newest (highest step) first; symbolic links and other names are left out.
  std::vector<CheckpointFile> checkpoints() const;
  std::string checkpoint_path(long step) const;
  // Removes all but the newest `keep` checkpoints.
  void prune_checkpoints(long keep) const;

  // The state of `src` right after its checkpoint `step`, as the start of this (new) run: the
  // checkpoint file (step > 0) and the log lines up to it. Throws Error when `src` has no such
  // checkpoint.
  void copy_start_from(const RunDir& src, long step) const;

  // exec: where the copy of an artifact named `file_name` goes (artifacts/ is created).
  std::string artifact_path(const std::string& file_name) const;
  // exec: the lines of inputs.jsonl (one JSON object each), checked against summary.json's facts
  // (a damaged file is an Error naming it, exit 2); empty when the run recorded none.
  std::vector<nlohmann::ordered_json> read_inputs() const;
  // exec --trace-steps: the path of the run's op trace, checked against summary.json's facts (a
  // damaged file is an Error naming it, exit 2); "" when the run kept none (a replay's trace has no
  // facts, and is not looked for here).
  std::string verified_op_trace() const;
  // exec: the kept text of code file `index` ("" when none was kept).
  std::string read_code_copy(long index) const;
  // exec: where the kept text of code file `index` goes (code/<index>.txt; code/ is created).
  std::string code_copy_path(size_t index) const;

  // exec --vary resume: the folder of the run's `n`-th process (processes/<n>/, created), whose
  // file() paths are that process's own files. The run's own files stay where they are.
  RunDir process(int n) const;
  // The process folders that exist, in number order (1, 2, ...); symbolic links are left out.
  std::vector<int> processes() const;

  // exec of a data-parallel program: the folder of rank `r`'s own records (ranks/<r>/, not
  // created: the program's processes write into it), whose file() paths are that rank's files.
  // Rank 0's records are the run's own. Throws Error when ranks/ or ranks/<r> is a symbolic link.
  RunDir rank(int r) const;
  // The rank folders that exist (ranks/<r>/, r >= 1), in rank order; symbolic links are left out.
  std::vector<int> ranks() const;
  // The path of file `f` of every rank, with "{rank}" where the rank's number goes, for the
  // program's processes, which learn their rank only once they run.
  std::string rank_file_template(RunFile f) const;

private:
  explicit RunDir(std::string path) : m_path(std::move(path)) {}
  std::string m_path;
};

// Takes the exclusive lock (flock on `lock_path`, created) of directory `dir`; throws Error naming
// `dir` ("another reprun process is writing this <what> (locked)") when another process holds it.
RunLock lock_directory(const std::string& lock_path, const std::string& dir, const char* what);

// A JSON file written atomically (indented, never through a symbolic link), and one read back as an
// object; the reader throws Error naming the file, what it is, and where it is corrupt.
void write_json(const std::string& path, const nlohmann::ordered_json& j);
nlohmann::ordered_json read_json_object(const std::string& path, const char* what);

// Throws Error when `path` is a symbolic link (reprun never follows one inside a run directory).
void refuse_link(const std::string& path);

// Keeps the leading complete lines whose "step" is <= max_step (a partial last line goes too);
// rewritten atomically. A log that does not exist is left alone.
void truncate_log_to_step(const std::string& path, long max_step);

} // namespace reprun
