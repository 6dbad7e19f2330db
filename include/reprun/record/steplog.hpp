// Reading step logs (steps.jsonl, and the logs external programs write for `reprun exec`).
// StepLogReader maps the file and hands out complete lines without parsing them, so identical
// lines can be compared as bytes first; parse_step_line() parses one line when its values matter.
// A partial last line (a crash mid-write) is not a line: it is reported, never an error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace reprun {

class StepLogReader {
public:
  explicit StepLogReader(const std::string& path); // throws Error naming the file
  ~StepLogReader();
  StepLogReader(const StepLogReader&) = delete;
  StepLogReader& operator=(const StepLogReader&) = delete;

  // Next complete line (without '\n'); false at the end. `lineno` is 1-based. The line stays
  // valid until the next call.
  bool next(std::string_view& line);
  long lineno() const { return m_lineno; }
  // Bytes of an unterminated last line (0 when the file ends with '\n').
  size_t partial_tail() const;
  // Counts the remaining complete lines without returning them.
  long count_remaining();
  const std::string& path() const { return m_path; }

private:
  std::string m_path;
  const char* m_data = nullptr;
  size_t m_size = 0;
  size_t m_pos = 0;
  size_t m_released = 0; // pages before this offset were given back (madvise)
  long m_lineno = 0;
  bool m_mapped = false;
};

struct TensorValue {
  std::string checksum; // "xxh3:..." / "sha256:..." / plain string
  bool has_norm = false;
  double norm = 0.0;
};

struct ParsedStep {
  long step = 0;
  bool has_epoch = false;
  long epoch = 0;
  bool has_loss = false;
  double loss = 0.0;
  bool has_batch = false;
  std::string batch;
  std::vector<std::pair<std::string, TensorValue>> tensors; // in the log's (model) order
  std::vector<std::pair<std::string, std::string>> forward;  // trace full: name, checksum
  std::vector<std::pair<std::string, std::string>> backward;
  std::vector<std::pair<std::string, double>> metrics;
};

// Parses one line; throws Error "<path>:<line>: ..." when it is not a valid step record.
ParsedStep parse_step_line(std::string_view line, const std::string& path, long lineno);

// The "step" of a line written as {"step":N,... (reprun's own layout), or -1 when the line does
// not start that way (then parse it).
long quick_step(std::string_view line);

// The "loss" value of a line without a full parse; false when absent or not a number.
bool quick_loss(std::string_view line, double& loss);

} // namespace reprun
