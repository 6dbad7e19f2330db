// The diff engine: are two runs bitwise identical, and if not, what differs in their metadata and
// where their numbers first part. It streams both step logs (memory does not grow with their
// length) and compares identical lines as bytes before parsing anything. Reports render a
// DiffResult (report.hpp); nothing here prints.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace reprun {

struct DiffOptions {
  std::optional<double> rtol;
  std::optional<double> atol;
  std::optional<uint64_t> max_ulps;
  std::vector<std::string> ignore_meta; // key prefixes the user chose to ignore
  std::vector<std::string> varied;      // key prefixes `check --vary` changed on purpose
  // Key prefixes that are not comparable between these runs, and why (a killed and resumed run's
  // stdout holds both processes' lines): listed, not counted.
  std::vector<std::pair<std::string, std::string>> incomparable;
  bool tolerance() const { return rtol || atol || max_ulps; }
  // Called about every 65,536 step records while both logs are read, with the bytes read so far
  // and the two logs' size (for a progress line; the diff itself never prints). Empty: not called.
  std::function<void(uint64_t done, uint64_t total)> progress;
  // reprun diff: compare the op traces both runs kept (exec --trace-steps) to name the op where
  // they part (op_localize.hpp); exec localizes by its own replays instead.
  bool stored_traces = false;
};

// One manifest field that differs.
struct MetaDelta {
  std::string key;      // "config.optimizer.lr"
  std::string category; // dataset, config, seeds, code, libraries, gpu, cpu, environment, host
  int rank = 0;         // 1 = most likely to explain a numeric divergence
  std::string a, b;     // JSON text of each side; "(absent)" when missing
  // material: counted, fails a bitwise diff; the others are shown but not counted. unrecorded: a
  // fact one run never wrote down (it made no optimizer step, its capture stopped): not a difference.
  enum class Kind { material, informational, volatile_field, ignored, varied, unrecorded } kind = Kind::material;
  std::string why; // why a delta is not counted, where the kind alone does not say it ("" otherwise)
  // What changed, said for a reader where "a -> b" says too little (an input file: "1,500 -> 1,520
  // lines; the first 1,500 are identical (20 appended)"), and for code the changed lines ("" when none).
  std::string detail;
  std::string lines;
};

// The two sides of a delta as a report shows them, each at most about `width` characters: where a
// value is longer, what differs is shown, never only a shared prefix: of two JSON lists of equal
// length, the differing elements with their positions ("[... 3: \"0.03\" ...]"); otherwise a window
// around the first differing character ("...--lr 0.03 --epochs 3...").
std::pair<std::string, std::string> shown_difference(const std::string& a, const std::string& b, size_t width = 70);

struct DataFileDelta {
  std::string path;
  uint64_t size_a = 0, size_b = 0;
};

struct DatasetDelta {
  std::vector<DataFileDelta> added, removed, changed;
  // The files differ by name only: the same bytes in the same order, so the built-in trainer reads
  // the same rows (listed, not counted).
  bool same_bytes = false;
  bool any() const { return !added.empty() || !removed.empty() || !changed.empty(); }
  bool counted() const { return any() && !same_bytes; }
};

struct TensorDelta {
  std::string name;
  double norm_a = 0, norm_b = 0;
  double rel = 0; // relative difference of the norms
  bool has_norm = false;
};

// The floating-point format a logged value was computed in: its ULPs are counted in that format.
// A step log holds decimal doubles; a PyTorch loss computed in float32 is a float32 value printed
// as a double, and a gap of 2,900 float32 ULPs reads as 1.5e12 float64 ones.
enum class FloatFormat { float64, float32, float16, bfloat16 };

// Why two step logs part, in the order diff_runs tells them apart.
enum class DivergenceKind {
  none,
  data_order,    // the batch's sample indices differ
  initial_state, // the step-0 weights differ (a step 0 without loss and batch: the built-in trainer's)
  computation,   // same batch, different numbers
  ended_early,   // one log stops while the other goes on
  steps_differ,  // the logs number their steps differently
};
// "data order", "initial state", "computation", "run ended early", "steps differ" ("" for none):
// the names reports and JSON use.
const char* divergence_kind_name(DivergenceKind k);
// True for the kinds a replay with trace "full" can localize (the numbers differ).
bool localizable(DivergenceKind k);

struct Divergence {
  bool found = false;
  long step = 0;
  long line = 0;
  long epoch = -1;
  DivergenceKind kind = DivergenceKind::none;
  const char* classification() const { return divergence_kind_name(kind); }
  std::string detail;
  std::string first_tensor;  // first differing tensor in model order
  std::string trace_phase;   // forward | backward | update (trace full on both sides)
  std::string trace_entry;   // first differing trace entry
  bool has_loss = false;
  double loss_a = 0, loss_b = 0;
  uint64_t loss_ulps = 0; // in loss_format
  FloatFormat loss_format = FloatFormat::float64;
  double loss_rel = 0;
  long loss_differs_from = -1; // first step whose loss differs (-1: none within the logs; a step 0 may have a loss)
  std::vector<TensorDelta> tensors;
  // A data-parallel exec: the rank whose log parts first (the root: at the first differing step,
  // the lowest rank whose loss differs there, else the lowest rank that differs); -1 without ranks.
  int rank = -1;
};

// One rank's comparison, when both runs are data-parallel programs of more than one rank.
struct RankResult {
  int rank = 0;
  bool found = false; // its logs part
  long step = 0;
  DivergenceKind kind = DivergenceKind::none;
  bool loss_differs = false; // its loss differs at `step`
  long steps_compared = 0;
};

struct GapPoint {
  long step = 0;
  double loss_a = 0, loss_b = 0;
  double abs_diff = 0;
  bool is_end = false;
};

struct RunSide {
  std::string label;      // path as given
  std::string steps_path;
  bool is_run_dir = false;
  nlohmann::ordered_json manifest; // null for bare logs
  nlohmann::ordered_json summary;  // null for bare logs
  long lines = 0;                  // complete step records
  long last_step = -1;
  size_t partial_tail = 0;
  std::string status; // from summary.json, or "" for bare logs
  // exec of a data-parallel program (the manifest's "ranks"): its world size (0: no process group)
  // and the step log of each rank but 0, whose log is steps_path.
  int world_size = 0;
  std::map<int, std::string> rank_logs;
  // ... and, once the ranks were compared, the complete records of every rank's log read (rank 0's
  // included) and how many logs that is (0: not a comparison rank by rank).
  long rank_records = 0;
  int ranks_read = 0;
};

// A likely cause of a difference and the change that removes it (audit/cause.hpp).
struct Diagnosis {
  std::string cause; // "atomic reduction: both runs use determinism.reduction \"atomic\", ..."
  std::string fix;   // "set determinism.reduction: ordered"
  // The cause says the numbers part from the same inputs: an op trace that finds inputs already
  // different contradicts it, and it is then withdrawn.
  bool claims_same_inputs = false;
  // The cause says a variable varied on purpose (exec --vary) changes the numbers: exec's replay at
  // one value confirms it with the op (and replaces it) or contradicts it (and withdraws it).
  bool claims_varied = false;
};

// Where, inside a step, two runs part (localize.hpp: how it is found and said).
struct Localization {
  bool found = false;
  long step = 0;
  std::string phase;  // forward | backward | update
  std::string layer;  // dense_2
  std::string tensor; // "weight gradient", "activation", ...
  std::string entry;  // raw trace entry name
  std::string effect; // "dense_1.weight": the original runs' first differing tensor in model order,
                      // when it is not the origin itself ("" otherwise)
  long effect_step = 0; // the step where `effect` was seen (the original divergence)
  long loss_differs_from = -1; // -1: none within the logs
  long replay_from = 0; // checkpoint step the replay started from
  std::string sentence; // "step 37, origin backward, layer dense_3, weight gradient (dense_3.weight.grad): ..."
  std::string note;
  std::string source; // exec: the source line of the origin op ("train.py:46")
  std::string repro;  // exec: repro.py, which reruns the origin op on its saved inputs ("" when none)
  int rank = -1;      // exec of a data-parallel program: the rank whose op trace holds the origin
  bool stored_traces = false; // found in the op traces the runs kept (exec --trace-steps), not by replays
};

struct DiffResult {
  bool identical = false;
  std::string mode; // "bitwise" or "tolerance (rtol=..., ...)"
  std::string verdict;
  RunSide a, b;
  std::vector<MetaDelta> meta; // sorted: material by rank, then informational, varied, ignored, volatile
  DatasetDelta dataset;
  Divergence divergence;
  std::vector<GapPoint> growth;
  std::optional<GapPoint> peak; // the largest |loss A - loss B| from the divergence on (first step reaching it)
  long steps_compared = 0;
  std::vector<std::pair<long, std::pair<double, double>>> loss_series; // decimated, for plots
  std::vector<std::string> notes;
  std::vector<Diagnosis> diagnosis; // most likely cause first; empty when identical
  // reprun diff of two runs that kept op traces (exec --trace-steps): the op where they part
  // (op_localize.hpp); exec's own replays put theirs beside the diff instead (CheckPair).
  std::optional<Localization> localization;
  std::vector<RankResult> ranks;    // rank by rank, when both runs have more than one rank
  // exec runs whose stdout differs: the first line that differs, "line 4: A `...`, B `...`" ("" otherwise)
  std::string stdout_difference;
  long material_meta_count() const;
};

// Compares two run directories, or two bare step-log files. Throws Error (exit 2) on unreadable
// or invalid input.
DiffResult diff_runs(const std::string& a, const std::string& b, const DiffOptions& opt);

// What a later look found the divergence to be (exec's replays: the first differing op ran before the
// training started, so the runs part in their initial state): the kind, the verdict's words and the
// likely causes follow it.
void reclassify_divergence(DiffResult& r, DivergenceKind kind);
// A data-parallel diff whose first differing step has no rank whose loss differs there (after an
// all-reduce every rank's parameters differ, whichever rank caused it, so the root is the lowest
// rank): the rank an op trace found is the root. Sets divergence.rank to `rank` and says it in the
// verdict; returns false, changing nothing, when a loss names the root or `rank`'s log does not
// part at that step.
bool set_root_rank(DiffResult& r, int rank);

// Sorts deltas as diff_manifests gives them: material by rank, then informational, varied, ignored,
// unrecorded and volatile ones (stable within each).
void sort_deltas(std::vector<MetaDelta>& deltas);

// Manifest comparison alone (used by diff_runs; exposed for tests).
std::vector<MetaDelta> diff_manifests(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b,
                                      const DiffOptions& opt, DatasetDelta& dataset);

// A program's arguments (program.argv's JSON text) with each "--name=value" split into "--name" and
// "value", as the program's option parser reads both; null when the text is not an array of strings.
nlohmann::ordered_json split_long_options(const std::string& argv_json);

// Distance in units in the last place between two doubles (0 for +0/-0; max for NaN).
uint64_t ulp_distance(double a, double b);

// "float32" -> float32 (also "torch.float32", "half", "bfloat16"); float64 for anything else.
FloatFormat float_format_named(const std::string& dtype);
const char* float_format_name(FloatFormat f);
// ULPs of format `f` between a and b when both are values of that format; in float64 otherwise.
uint64_t ulp_distance(double a, double b, FloatFormat f);
// The format of the losses two manifests record (framework.loss_dtype, written by reprun's
// PyTorch capture); float64 unless both name the same narrower one.
FloatFormat loss_format(const nlohmann::ordered_json& manifest_a, const nlohmann::ordered_json& manifest_b);

} // namespace reprun
