// Checkpoint files: everything needed to continue a run bit for bit (weights, optimizer state, the
// step reached). There is no random-generator state to save: every draw is a pure function of
// (seed, stream, coordinates).
//
// Format reprun.checkpoint/1 (oldest readable: 1):
//   "REPRUNCK"                                   8 bytes, magic
//   header JSON, one line, '\n'-terminated        {"format", "step", "config_digest",
//                                                 "tensors": [{"name", "count"}...],
//                                                 "payload_bytes", "payload_sha256"}
//   payload                                      the tensors' float32 values, little-endian, in
//                                                 header order
// Why: the header is readable with `head -c 2000`, the payload is a plain memory image, and the
// SHA-256 over the payload catches truncation and corruption before a single value is used.
#pragma once

#include <string>
#include <vector>

namespace reprun {

struct NamedTensor {
  std::string name;
  std::vector<float>* data; // read: resized and filled; write: written
};

// Writes atomically (temp file, fsync, rename).
void write_checkpoint(const std::string& path, long step, const std::string& config_digest,
                      const std::vector<NamedTensor>& tensors);

// Reads a checkpoint's step without reading the payload; throws Error.
long checkpoint_step(const std::string& path);

// Reads and verifies a checkpoint into `tensors` (names and sizes must match). Throws Error naming
// the file and the problem: bad magic, future format, truncated, digest mismatch, other config.
long read_checkpoint(const std::string& path, const std::string& config_digest,
                     const std::vector<NamedTensor>& tensors);

// The same from memory (`path` names it in messages): what the fuzzer drives.
long read_checkpoint_bytes(const std::string& bytes, const std::string& path, const std::string& config_digest,
                           const std::vector<NamedTensor>& tensors);

// Checkpoint files of a run directory, newest (highest step) first.
std::vector<std::string> list_checkpoints(const std::string& run_dir);
std::string checkpoint_path(const std::string& run_dir, long step);

} // namespace reprun
