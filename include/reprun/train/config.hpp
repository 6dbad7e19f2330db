// The training configuration: parsed from JSON with every key checked (type, range, unknown keys
// with "did you mean"), every default resolved, and written back whole into the run record, so no
// hidden default can change a result silently. Keys are documented in docs/config.md.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace reprun {

struct DataConfig {
  std::string kind = "synthetic"; // synthetic | csv | idx
  // synthetic: Gaussian-like clusters, one centre per class, generated from the seed
  long samples = 2000;
  long features = 20;
  long classes = 4; // csv/idx: 0 in the file means "max label + 1", resolved after loading
  double noise = 1.0;
  // csv
  std::string path;
  long label_column = -1; // negative counts from the end; resolved to an index
  bool label_column_given = false; // set in the config (not its default): the label checks trust it more
  std::string header = "auto"; // "auto" | true | false, resolved to true/false after reading
  // idx
  std::string images;
  std::string labels;
  // all kinds
  double validation_fraction = 0.1;
  std::string normalize = "standard"; // none | standard (statistics of the training split)
  // The seed of the data's random draws (synthetic data, the train/validation split); absent
  // (nullopt): the experiment seed. `reprun search` fixes it, so that every trial sees the same data.
  std::optional<uint64_t> seed;
};

struct ModelConfig {
  std::vector<long> hidden = {64};
  std::string activation = "relu"; // relu | tanh
  double dropout = 0.0;
};

struct OptimizerConfig {
  std::string name = "sgd"; // sgd | adam
  double lr = 0.05;
  double momentum = 0.9;
  double weight_decay = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

struct TrainingConfig {
  long batch_size = 32;
  long epochs = 0;          // 0 when "steps" is given; default k_default_epochs when neither is
  long steps = 0;           // resolved: total optimizer steps
  long accumulation = 1;    // micro-batches per step
  long checkpoint_every = 0; // resolved default: min(100, steps per epoch)
  long eval_every = 0;       // resolved default: steps per epoch
  long checkpoint_keep = 2;
  long eval_batch_size = 256; // rows per evaluation forward pass; cannot change a result
  bool shuffle = true;
};

// Passes over the training split when neither training.epochs nor training.steps is given.
inline constexpr long k_default_epochs = 20;

// The most MPI ranks a run may have (determinism.ranks, --ranks, check --vary ranks).
inline constexpr int k_max_ranks = 4096;

struct DeterminismConfig {
  int threads = 0;                 // 0 in the file: all cores; resolved to a number
  int ranks = 1;                   // MPI processes of a data-parallel run (docs/scaling.md); a run
                                   // under mpirun records its world size here
  std::string reduction = "ordered"; // ordered | atomic
  std::string trace = "weights";     // loss | weights | full
  std::string device;                // cpu | cuda; "" when not given (cpu, and absent from the
                                     // resolved config, so configs without it resolve as before)
};

// The device a run computes on: "cpu" or "cuda".
inline const std::string& device_of(const DeterminismConfig& d) {
  static const std::string k_cpu = "cpu";
  return d.device.empty() ? k_cpu : d.device;
}

struct Config {
  uint64_t seed = 0;
  bool seed_drawn = false; // true when the file had no seed and one was drawn from the OS
  DataConfig data;
  ModelConfig model;
  OptimizerConfig optimizer;
  TrainingConfig training;
  DeterminismConfig determinism;
  // Where the config came from (not part of the resolved config).
  std::string source;     // path of the config file, or "<embedded>"
  std::string base_dir;   // relative data paths resolve against this folder
};

// Parses and checks a config document. `source` names the file in error messages.
// `overrides` are KEY=VALUE strings from --set, applied before checking.
Config parse_config(const std::string& text, const std::string& source, const std::string& base_dir,
                    const std::vector<std::string>& overrides);
Config load_config_file(const std::string& path, const std::vector<std::string>& overrides);

// The resolved config as JSON (every key, every default), in a stable key order.
nlohmann::ordered_json config_to_json(const Config& c);
// Reads back a resolved config (from a manifest); throws Error naming `source`.
Config config_from_json(const nlohmann::ordered_json& j, const std::string& source);

// Every key of the config, dotted ("optimizer.lr"), sections too ("optimizer"), in docs/config.md order.
const std::vector<std::string>& config_keys();
// " (did you mean 'optimizer.lr'?)" for an unknown dotted key, or "".
std::string suggest_config_key(const std::string& dotted);

// Throws Error "source: KEY: given twice in one object" for a JSON text with a duplicate key (JSON
// parsers keep the last silently); a text that is not valid JSON is left to the caller's parse.
void refuse_duplicate_keys(const std::string& text, const std::string& source);

// Applies one KEY=VALUE override to a JSON document (the value parsed as JSON, else a string).
void apply_override(nlohmann::ordered_json& doc, const std::string& assignment);

// Where `c` leaves a value to the data (csv/idx: classes 0, header "auto", a negative label
// column), takes the value of `resolved` (a run's resolved config): what a config states can then be
// compared with a run's before any data is read.
void take_data_decisions(DataConfig& c, const DataConfig& resolved);

// The seed of the data's draws: data.seed, else the experiment seed.
uint64_t data_seed(const Config& c);

// Absolute data path for a config-relative path.
std::string resolve_data_path(const Config& c, const std::string& p);

} // namespace reprun
