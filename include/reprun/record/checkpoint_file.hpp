// Checkpoint files: a container of named float32 tensors with the step reached, bound to a config
// digest. What the tensors mean (weights, optimizer state) and how a run is restored from them is
// the trainer's business (train/state.hpp); where the files live is RunDir's (run_dir.hpp).
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

// One tensor of a checkpoint, in host memory: written from, or read into, `count` floats at `data`.
struct NamedTensor {
  std::string name;
  float* data;
  size_t count;
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

} // namespace reprun
