// Datasets: the synthetic default (generated from the seed), CSV files or folders, and the IDX
// (MNIST) format; the seeded train/validation split and the normalisation from training
// statistics. Loading checks everything and fails with the file and line; it never guesses.
#pragma once

#include "reprun/train/config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace reprun {

class ThreadPool;

struct DataFile {
  std::string path; // as shown to the user: relative to the config's folder when inside it
  uint64_t size = 0;
  std::string sha256;
};

struct Dataset {
  long n = 0;
  long features = 0;
  long classes = 0;
  std::vector<float> x;   // (n, features), row-major
  std::vector<int32_t> y; // (n)
  std::vector<DataFile> files; // empty for synthetic data
  std::string fingerprint;     // sha256 over the files (tagged), or xxh3 of generated content
  // Facts shown at train start and recorded in the manifest (docs/run-format.md, `data`).
  long label_column = -1;          // csv: the column index the labels came from (0-based)
  std::string label_name;          // csv with a header: that column's name
  std::vector<std::string> column_names; // csv with a header: every column's name, in file order
  std::vector<long> class_counts;  // samples per class, 0..classes-1
  // The config keys the config left to this data (csv and idx: classes 0, header "auto", a negative
  // label_column), resolved from it: recorded, so that a diff tells values the data decided from
  // values a config set.
  std::vector<std::string> left_to_data;
  // What a person should hear of before trusting a run on this data (a column of row IDs trained as
  // a feature); train says each once, as a warning, when it starts.
  std::vector<std::string> warnings;
};

// Sizes d.x for n floats (zero). A large one is first offered the kernel's huge pages (Linux's
// transparent huge pages, where the system leaves them to madvise): a step's batch is rows
// gathered at random from the whole set, and with 4 KiB pages nearly every row costs a TLB miss
// (in a virtual machine a walk of two page tables). The values are the same either way.
void size_features(Dataset& d, size_t n);

// The smallest and largest number of samples of a class.
std::pair<long, long> class_count_range(const Dataset& d);
// One line for people: rows, features, classes with their sizes, the label column, validation rows.
std::string describe_data(const Dataset& d, long validation_rows);

struct Split {
  std::vector<uint32_t> train; // sample indices, in split order
  std::vector<uint32_t> val;
};

// Loads the data the config names; resolves data-dependent defaults in `cfg.data` (CSV header,
// label column, class count). Throws Error naming the file and line.
Dataset load_dataset(Config& cfg, ThreadPool* pool);

Split split_dataset(const Dataset& d, double validation_fraction, uint64_t seed);

// Standardises features in place with mean and std of the training samples (float64, summed in
// index order); constant features keep scale 1.
void normalize_standard(Dataset& d, const Split& s);

// Order of training positions for one epoch (a seeded Fisher-Yates shuffle, or identity).
std::vector<uint32_t> epoch_order(size_t n, uint64_t seed, long epoch, bool shuffle);

// Readers, exposed for tests and fuzzing.
Dataset read_csv(const std::vector<std::string>& files, long& label_column, std::string& header, long classes);
Dataset read_idx(const std::string& images, const std::string& labels, long classes);
// The same from memory (file names for messages only): what the fuzzers drive.
Dataset parse_csv(const std::vector<std::pair<std::string, std::string>>& named_texts, long& label_column,
                  std::string& header, long classes);
Dataset parse_idx(const std::string& images_bytes, const std::string& images_name, const std::string& labels_bytes,
                  const std::string& labels_name, long classes);

} // namespace reprun
