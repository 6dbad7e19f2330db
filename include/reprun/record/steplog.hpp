// Reading step logs (steps.jsonl, and the logs external programs write for `reprun exec`).
// StepLogReader reads the file with read() into one reused buffer and hands out complete lines
// without parsing them, so identical lines can be compared as bytes first; parse_step_line()
// parses one line when its values matter. A partial last line (a crash mid-write) is not a line:
// it is reported, never an error. The reader can digest the records it reads (XXH3-64, the
// integrity facts of run_dir.hpp), so a log is verified by the same read that compares it. A
// long log can be read ahead by a thread that also finds its lines, steps and losses (LineIndex),
// so that the reader's caller takes them without searching or parsing on its own core.
//
// Why read() and not mmap: a profile of `reprun diff` on two 500 MB logs (docs/performance.md)
// spent 2.5x the CPU time of `cat` in page faults through a fresh mapping, and 1.1x through read()
// into a 128 KiB buffer, which also keeps the bytes in L2 for the comparison and the digest.
#pragma once

#include "reprun/core/hash.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace reprun {

class ReadAhead;

// What a read-ahead thread (or, after a diff's divergence, a reader without one) found in a block
// of a log, so that its lines are not searched for again one by one: where each '\n' is, and the step (and, once asked, the loss) of
// each line that starts in the block, as quick_step and quick_loss give them.
struct LineIndex {
  struct Line {
    uint32_t end;     // its '\n', from the block's first byte
    bool has_loss;    // `loss` holds its loss (losses asked for, and quick_loss found it)
    long step;        // -1: not known (begun in an earlier block, or not reprun's layout: the
                      // reader parses it)
    double loss;
  };
  std::vector<Line> lines;
};

class StepLogReader {
public:
  // The read size: cat's, and small enough that a line just read is still in L2 when it is
  // compared and digested. A longer line grows the buffer (doubling): any line comes back whole.
  static constexpr size_t k_block = 128u << 10;

  // With `read_ahead`, a log of k_read_ahead_min bytes or more is read by a thread of its own a
  // few blocks ahead (record/read_ahead.hpp): `diff` reads two logs, and the kernel's copies of
  // their bytes then run beside the comparison. Throws Error naming the file.
  static constexpr uint64_t k_read_ahead_min = 1u << 20;
  explicit StepLogReader(const std::string& path, bool read_ahead = false);
  ~StepLogReader();
  StepLogReader(const StepLogReader&) = delete;
  StepLogReader& operator=(const StepLogReader&) = delete;

  // Next complete line (without '\n'); false at the end. `lineno` is 1-based. The line stays
  // valid until the next call of next() or next_if().
  bool next(std::string_view& line);
  // Takes the next line only when it is exactly `expected` (its bytes, then '\n'), checked in
  // place without searching for its end; false, and nothing taken, otherwise (a different line,
  // or the end). `expected` must not point into this reader's buffer.
  bool next_if(std::string_view expected);
  long lineno() const { return m_lineno; }
  // The bytes read and not taken yet: complete lines, then maybe the start of one. Valid until
  // the next call of next(), next_if() or take_lines().
  std::string_view buffered() const { return {m_data + m_pos, m_end - m_pos}; }
  // Takes the first `lines` lines of buffered(), `bytes` in all with their '\n's, as that many
  // next() calls would (the caller found them); never more than lines_to_limit().
  void take_lines(size_t bytes, long lines);
  // The lines at the start of buffered() that the block's index holds (its read-ahead thread's,
  // or its own after want_losses()): the '\n' of the i-th is at base + lines[i].end, its step
  // lines[i].step (-1: not known). count 0 without an index.
  struct Known {
    const char* base = nullptr;
    const LineIndex::Line* lines = nullptr;
    size_t count = 0;
  };
  Known known() const;
  // Takes the first `lines` (at most known().count, and lines_to_limit()) of those lines.
  void take_known(long lines);
  // What the block's index holds of the line the last next() or next_if() took: its step
  // (-1: not known) and its loss (false: not known; quick_loss of the line says).
  long taken_step() const { return m_taken_step; }
  bool taken_loss(double& loss) const {
    loss = m_taken_loss;
    return m_taken_has_loss;
  }
  // From now on the read-ahead thread also finds the losses of the lines (see taken_loss); a
  // reader without one finds the lines, steps and losses of each block it reads next (known()).
  void want_losses();
  // How many lines may be taken at once before the last one digest_lines() asked for.
  long lines_to_limit() const {
    return m_digesting && m_limit >= 0 ? m_limit - m_lineno : std::numeric_limits<long>::max();
  }
  // Bytes of an unterminated last line (0 when the file ends with '\n'); known once next() has
  // returned false.
  size_t partial_tail() const { return m_at_end ? m_end - m_pos : 0; }
  // Counts the remaining complete lines without returning them.
  long count_remaining();
  const std::string& path() const { return m_path; }
  // Bytes consumed so far (complete lines with their '\n') and the file's size when opened: for
  // progress reports.
  uint64_t offset() const { return m_base + m_pos; }
  uint64_t size() const { return m_size; }

  // From now on (before the first line is read) the first `limit` complete lines are digested
  // as they are read, each with its '\n' (all of them when limit < 0): digested() and
  // digest_value() are the log's integrity facts once digest_complete().
  void digest_lines(long limit);
  bool digest_complete() const { return m_eof || (m_limit >= 0 && m_lineno >= m_limit); }
  long digested() const { return m_limit >= 0 && m_lineno > m_limit ? m_limit : m_lineno; }
  uint64_t digest_value();

private:
  bool fill();            // more bytes after m_end; false at the end of the file
  void take(size_t end);  // the line [m_pos, end) and its '\n' are consumed
  void digest_upto(size_t end);

  std::string m_path;
  int m_fd = -1;
  uint64_t m_size = 0;
  struct FreeAligned {
    void operator()(char* p) const;
  };
  using Buffer = std::unique_ptr<char[], FreeAligned>;
  static Buffer allocate(size_t size);

  bool fill_ahead();      // fill() from the read-ahead thread's next block

  Buffer m_buf; // page-aligned: read() copies into it a tenth faster than 16 bytes off
  size_t m_cap = 0;
  bool m_want_ahead = false;          // read ahead, from the first fill()
  std::unique_ptr<ReadAhead> m_ahead; // the read-ahead thread, once started
  bool m_thread_digests = false;      // it digests the lines (all of them), not this reader
  int m_slot = -1;  // the ring's block m_data is in (-1: m_buf or m_spill)
  Buffer m_spill;   // read ahead: a line longer than a block's headroom, with the block after it
  const LineIndex* m_index = nullptr; // the block's lines, as the thread (or index_lines here) found them
  bool m_index_here = false;          // no thread, losses asked for: m_own_index of each block read
  LineIndex m_own_index;
  size_t m_index_base = 0;            // where the block starts in m_data
  size_t m_cursor = 0;                // m_index's next '\n' not taken
  long m_taken_step = -1;
  bool m_taken_has_loss = false;
  double m_taken_loss = 0;
  char* m_data = nullptr; // the bytes being read: m_buf, a block of the ring, or m_spill
  size_t m_pos = 0;      // start of the next line in m_data
  size_t m_end = 0;      // end of the bytes in m_data
  size_t m_scanned = 0;  // no '\n' in [m_pos, m_scanned): a long line is not searched again
  uint64_t m_base = 0;   // file offset of m_data[0]
  bool m_eof = false;    // read() returned 0
  bool m_at_end = false; // next() returned false: what is left in m_buf is a partial line
  long m_lineno = 0;
  // Digest: off (m_digesting false), or on until line m_limit (-1: to the end), of the bytes
  // [m_digested, m_pos) not yet added.
  bool m_digesting = false;
  long m_limit = -1;
  size_t m_digested = 0;
  Xxh3Stream m_digest;
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

// Both in one pass, for a line in reprun's own layout {"step":N,"epoch":M,"loss":X,...} ending in
// '}' with N >= 0 and X a number: what quick_step and quick_loss give. False for any other line
// (then ask them one by one).
bool quick_step_loss(std::string_view line, long& step, double& loss);

} // namespace reprun
