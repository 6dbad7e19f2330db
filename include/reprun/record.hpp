// The run record: a run directory that describes itself (format "reprun.run/1", docs/run-format.md).
//   manifest.json   everything that can change a result (written at start, atomically)
//   steps.jsonl     one line per optimizer step, appended and flushed as the run goes
//   evals.jsonl     validation metrics
//   summary.json    status (running / complete / interrupted / failed: reason), final metrics
//   checkpoints/    step-NNNNNNNNN.ckpt files
// Lines of the logs are written with one write() each, so a crash leaves at most one partial last
// line, which readers ignore.
#pragma once

#include "reprun/model.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace reprun {

inline constexpr const char* k_run_format = "reprun.run/1";
inline constexpr int k_run_format_version = 1;

struct TensorSum {
  std::string name;
  uint64_t xxh3 = 0;
  double norm = 0.0;
};

struct StepRecord {
  long step = 0;
  long epoch = 0;
  double loss = 0.0;
  uint64_t batch = 0;
  std::vector<TensorSum> tensors;    // trace weights and full
  std::vector<TraceEntry> forward;  // trace full
  std::vector<TraceEntry> backward; // trace full
};

// A float64 as JSON: shortest round-trip digits; non-finite values as the strings "NaN",
// "Infinity", "-Infinity" (JSON has no literal for them).
std::string json_number(double v);
std::string format_step_line(const StepRecord& r); // ends with '\n'
// The step-0 line: the initial weights (no loss, no batch), written before the first step.
std::string format_initial_line(const StepRecord& r);

// Append-only log: one write() per line.
class AppendLog {
public:
  explicit AppendLog(const std::string& path);
  ~AppendLog();
  AppendLog(const AppendLog&) = delete;
  AppendLog& operator=(const AppendLog&) = delete;
  void append(const std::string& line);

private:
  std::string m_path;
  int m_fd = -1;
};

// Files of a run directory are used only when they are not symbolic links: reprun never follows
// a run directory's contents outside it. Throws Error naming the path.
void refuse_link(const std::string& path);

// Keeps the leading complete lines whose "step" is <= max_step (and drops a partial last line);
// rewritten atomically. Used when resuming from a checkpoint.
void truncate_log_to_step(const std::string& path, long max_step);

// Exclusive lock on a run directory (flock on RUN_DIR/.lock), held until destroyed. Throws Error
// when another process holds it.
class RunLock {
public:
  explicit RunLock(const std::string& run_dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

private:
  int m_fd = -1;
};

// Reads and checks a run directory's manifest (format version, JSON); throws Error.
nlohmann::ordered_json read_manifest(const std::string& run_dir);
// Reads summary.json, or returns {"status": "unknown (no summary.json)"} when absent.
nlohmann::ordered_json read_summary(const std::string& run_dir);

std::string now_iso8601();

} // namespace reprun
