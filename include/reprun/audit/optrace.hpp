// Operation-level localization for programs run by `reprun exec`: the op traces (ops.jsonl) that
// reprun_capture writes in a replay list every ATen op in execution order with its phase, module,
// source line and exact fingerprints of its inputs (taken before it ran) and outputs. Two traces
// part at the first op whose outputs differ: when its inputs match, that op is the origin (a
// non-deterministic kernel, a random draw); when they do not, the inputs came from outside the
// traced ops (data, another process) or from uninitialized memory, and the report says which.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace reprun {

struct OpRecord {
  long index = -1;
  long step = 0;
  std::string phase, op, module, module_type, func, where, device, args;
  std::optional<std::string> argv; // the non-tensor arguments as text, when the capture kept them (short)
  bool compiled = false; // a replay with compilation off: the op runs in torch.compile'd code in the program's runs
  // An op that draws from a random generator (torch tags it nondeterministic_seeded; the capture's
  // random_ops.py decides, and this field is how the comparison knows): the generator before it drew.
  struct Generator {
    bool own = false;   // passed by the program (generator=); else the device's default generator
    uint64_t seed = 0;  // its initial_seed()
    std::string state;  // a digest of its state; "" where torch did not expose the generator
    bool known() const { return !state.empty(); }
  };
  std::optional<Generator> gen;
  std::vector<std::string> in;
  std::vector<long> src; // per input: the op that last wrote its storage, -1 when none did
  std::optional<std::vector<std::string>> out; // absent: not compared (uninitialized memory)
};

struct OpDivergence {
  enum class Kind {
    none,          // the traces agree as far as both go
    same_inputs,   // the first op whose outputs differ had identical inputs: the origin
    inputs_differ, // ... had inputs that already differed, not made by a traced op
    paths_differ,  // the runs ran different ops (or one trace ended)
  } kind = Kind::none;
  OpRecord a, b;
  long ops_compared = 0;
  std::vector<size_t> differing_inputs; // positions in `in`
  std::string input_origin;             // inputs_differ: where the differing input came from
  // inputs_differ: the differing input is the storage an aten.set_ adopts (its last input), written
  // by no traced op: a DataLoader worker's shared memory, a file torch.load read, another process.
  bool adopted_storage = false;
  // inputs_differ with every tensor input equal: only the non-tensor arguments differ (a learning
  // rate); differing_inputs is empty then.
  bool arguments_differ() const { return kind == Kind::inputs_differ && differing_inputs.empty(); }
  std::string end_a, end_b;             // how each trace ended: steps | max_ops | exit | "" (cut short)
  // inputs_differ, in a data-parallel program: the first differing input is the result of a
  // collective, the `collective`-th (from 0) of A's trace; -1 otherwise. Each rank runs the same
  // collectives in the same order, so the k-th of every rank's trace is the same collective.
  long collective = -1;
  // A replay with compilation off: an op up to the first differing one (it included) runs in
  // torch.compile'd code in the program's own runs, where other kernels may give other numbers.
  bool compiled_code = false;
};

// Compares two op traces. Throws Error (exit 2) when a trace cannot be read. A random draw whose
// only differing inputs are uninitialized memory it overwrites (dropout's bernoulli_ on an
// empty_like) had the same inputs: the generator decided. With `resume_aligned` (traces that start
// at a resume boundary, one of them in a fresh process), the autograd engine's accumulation of a
// parameter's gradient is not compared: a fresh process has no .grad yet and stores the first one
// (aten.detach) where the uninterrupted run adds it to zeros (aten.add_); what it writes is
// compared where it is read. Nor are the ops of zero_grad (phase "zero_grad"): the fresh process has
// no gradient to zero where the uninterrupted run zeroes them in place.
OpDivergence compare_op_traces(const std::string& path_a, const std::string& path_b, bool resume_aligned = false);

// What the origin op is known for and how to fix it. fix_kind tells repro.py what to try:
// deterministic | threads | seed | "".
struct OpCause {
  std::string reason;
  std::string fix;
  std::string fix_kind;
};

// The cause of a same-inputs divergence. `framework_a/_b` are the manifests' framework sections
// (for the thread counts), `env_threads` a note on differing thread variables, `kernels` the CPU
// kernels that differ (kernel_difference; "" when none).
OpCause op_cause(const OpDivergence& d, const nlohmann::ordered_json& framework_a,
                 const nlohmann::ordered_json& framework_b, const std::string& env_threads,
                 const std::string& kernels = "");

// What differs between two runs' manifests in the CPU kernels a PyTorch program ran: the variables
// that choose them (OPENBLAS_CORETYPE, ATEN_CPU_CAPABILITY, ...), torch's instruction set and each
// OpenBLAS's core (framework.cpu): "OPENBLAS_CORETYPE is Cooperlake in A and Haswell in B; OpenBLAS
// (libblas.so.3) chose Cooperlake in A and Haswell in B"; "" when nothing differs.
std::string kernel_difference(const nlohmann::ordered_json& manifest_a, const nlohmann::ordered_json& manifest_b);

// "step 1, forward, GNN.forward (train.py:46): aten.index_add_ — same inputs, different outputs. ..."
std::string op_sentence(const OpDivergence& d, const OpCause& cause);

// "aten.index_add_.default" -> "aten.index_add_".
std::string short_op_name(const std::string& op);

// True for an op that draws from a random generator (randn, bernoulli_, dropout, randperm, ...): its
// record carries the generator (the capture decides which ops do, from torch's own op tags).
bool is_random_draw(const OpRecord& r);

// True for an op that makes a tensor of a storage (aten.set_.source_Storage...): the capture
// records that storage as its last input.
bool adopts_storage(const OpRecord& r);

// True for a collective of torch.distributed (c10d.allreduce_, c10d.broadcast_, ...).
bool is_collective(const std::string& op);

// How a trace ended: its last line's "end" ("steps": it reached the steps it was asked for;
// "max_ops": its cap of ops; "exit": the program ended first), or "" when it has no end line (cut
// short, or no file). Reads only the file's end.
std::string op_trace_end(const std::string& path);

// The k-th collective (from 0) of a trace, or none when it holds fewer. Throws Error as
// compare_op_traces does.
std::optional<OpRecord> nth_collective(const std::string& path, long k);

} // namespace reprun
