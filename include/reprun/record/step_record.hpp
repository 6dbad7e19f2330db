// The records of a run's logs, and the one place their lines are formatted.
//   steps.jsonl  {"step":N,"epoch":E,"loss":L,"batch":"<xxh3>","tensors":{...},"forward":[...],"backward":[...]}
//   evals.jsonl  {"step":N,"val_loss":L,"val_accuracy":A,"val_samples":K}
// Keys in this order, floats in the shortest digits that read back to the same float64, so equal
// values give equal bytes and two logs can be compared line by line as bytes (docs/run-format.md).
// Reading them back: steplog.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace reprun {

// One entry of the per-step trace of activations and gradients (trace level "full"), in
// dataflow order: "dense_2.weight.grad" and the XXH3-64 of its float32 bytes.
struct TraceEntry {
  std::string name;
  uint64_t xxh3 = 0;
};

// Checksum and L2 norm of one weight tensor after the update.
struct TensorSum {
  std::string name;
  uint64_t xxh3 = 0;
  double norm = 0.0;
};

struct StepRecord {
  long step = 0;
  long epoch = 0;
  double loss = 0.0;
  uint64_t batch = 0;                // XXH3-64 of the batch's sample indices
  std::vector<TensorSum> tensors;    // trace weights and full, in model order
  std::vector<TraceEntry> forward;   // trace full
  std::vector<TraceEntry> backward;  // trace full
};

struct EvalRecord {
  long step = 0;
  double val_loss = 0.0;
  double val_accuracy = 0.0;
  long val_samples = 0;
};

// A float64 as JSON: shortest round-trip digits; non-finite values as the strings "NaN",
// "Infinity", "-Infinity" (JSON has no literal for them), quotes included.
std::string json_number(double v);

std::string format_step_line(const StepRecord& r); // ends with '\n'
// The step-0 line: the initial weights (no loss, no batch), written before the first step.
std::string format_initial_line(const StepRecord& r);
std::string format_eval_line(const EvalRecord& r);
// {"step":N,"loss":L}: what `reprun exec --loss-regex` builds from a program's output.
std::string format_loss_line(long step, double loss);

} // namespace reprun
