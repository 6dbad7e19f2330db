// Synthetic data, split, shuffle and normalisation. File formats live in csv.cpp and idx.cpp.
#include "reprun/train/data.hpp"

#include "reprun/core/error.hpp"
#include "reprun/meta/fingerprint.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/train/rng.hpp"
#include "reprun/core/threadpool.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <map>

namespace reprun {

namespace fs = std::filesystem;

namespace {

// Approximately Gaussian value from 4 uniforms (Irwin-Hall, scaled to unit variance): no
// transcendental function involved, so the data cannot depend on libm.
float gaussianish(const Philox4& r) {
  float s = to_unit_float(r[0]) + to_unit_float(r[1]) + to_unit_float(r[2]) + to_unit_float(r[3]);
  return (s - 2.0f) * 1.7320508f;
}

Dataset make_synthetic(const DataConfig& dc, uint64_t seed, ThreadPool* pool) {
  Dataset d;
  d.n = dc.samples;
  d.features = dc.features;
  d.classes = dc.classes;
  size_features(d, static_cast<size_t>(d.n * d.features));
  d.y.resize(static_cast<size_t>(d.n));
  // Class centres: uniform in [-1, 1) per feature.
  std::vector<float> centres(static_cast<size_t>(d.classes * d.features));
  for (long c = 0; c < d.classes; ++c) {
    for (long f = 0; f < d.features; ++f) {
      Philox4 r = draw(seed, Stream::data_means, static_cast<uint32_t>(c), static_cast<uint32_t>(f / 4));
      centres[static_cast<size_t>(c * d.features + f)] = 2.0f * to_unit_float(r[f % 4]) - 1.0f;
    }
  }
  const float noise = static_cast<float>(dc.noise) * 0.5f;
  constexpr long k_rows = 256;
  int tasks = static_cast<int>((d.n + k_rows - 1) / k_rows);
  auto gen = [&](int t, int) {
    long i1 = std::min(d.n, (t + 1) * k_rows);
    for (long i = t * k_rows; i < i1; ++i) {
      Philox4 lr = draw(seed, Stream::data_labels, static_cast<uint32_t>(i));
      int32_t label = static_cast<int32_t>(to_below(lr[0], lr[1], static_cast<uint32_t>(d.classes)));
      d.y[static_cast<size_t>(i)] = label;
      const float* c = &centres[static_cast<size_t>(label * d.features)];
      float* x = &d.x[static_cast<size_t>(i * d.features)];
      for (long f = 0; f < d.features; ++f) {
        Philox4 r = draw(seed, Stream::data_noise, static_cast<uint32_t>(i), static_cast<uint32_t>(f));
        x[f] = c[f] + noise * gaussianish(r);
      }
    }
  };
  if (pool) {
    pool->parallel_for(tasks, gen);
  } else {
    for (int t = 0; t < tasks; ++t) {
      gen(t, 0);
    }
  }
  uint64_t hx = xxh3_64(d.x.data(), d.x.size() * sizeof(float));
  uint64_t hy = xxh3_64(d.y.data(), d.y.size() * sizeof(int32_t));
  d.fingerprint = "xxh3:" + hex64(hx) + hex64(hy);
  return d;
}

std::vector<std::string> csv_files(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      if (e.path().extension() == ".csv" && e.is_regular_file()) {
        files.push_back(e.path().string());
      }
    }
    if (ec) {
      throw Error(path, "cannot list directory: " + ec.message());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) {
      throw Error(path, "directory contains no *.csv file");
    }
    return files;
  }
  if (!fs::exists(path, ec)) {
    throw Error(path, "no such file or directory");
  }
  return {path};
}

// Names recorded for data files, as `reprun hash` names them: relative to the dataset folder for a
// folder, else the file name; two machines with different checkouts record the same names, and
// `reprun hash DATA` prints the manifest's fingerprint.
std::string display_path(const std::string& file, const std::string& root) {
  if (root.empty()) {
    return file;
  }
  std::error_code ec;
  fs::path rel = fs::relative(file, root, ec);
  return ec || rel.empty() ? file : rel.string();
}

// The dataset fingerprint is the tree root of the files read, under the names recorded (the same
// definition and cache as `reprun hash`).
void fingerprint_files(Dataset& d, const std::vector<std::string>& files, const std::vector<std::string>& names) {
  HashResult r = hash_files(files, names, HashOptions{});
  for (const auto& e : r.entries) {
    d.files.push_back({e.path, e.size, e.sha256});
  }
  d.fingerprint = r.root;
}

// Samples per class, in label order.
std::vector<long> count_classes(const Dataset& d) {
  std::vector<long> counts(static_cast<size_t>(std::max(0L, d.classes)), 0);
  for (int32_t y : d.y) {
    if (y >= 0 && static_cast<size_t>(y) < counts.size()) {
      ++counts[static_cast<size_t>(y)];
    }
  }
  return counts;
}

// Counts of the values of feature `f` when every one is a non-negative integer and there are at
// most `most` distinct ones; empty otherwise (the scan stops at the first value that rules it out).
std::map<long, long> small_integer_values(const Dataset& d, long f, size_t most) {
  std::map<long, long> counts;
  for (long i = 0; i < d.n; ++i) {
    const float v = d.x[static_cast<size_t>(i * d.features + f)];
    if (!(v >= 0.0f) || v > 1e5f || v != std::floor(v)) {
      return {};
    }
    if (++counts[static_cast<long>(v)] == 1 && counts.size() > most) {
      return {};
    }
  }
  return counts;
}

// "column 3 \"weekday\"" (1-based, with its header name when there is one).
std::string column_phrase(const Dataset& d, long column) {
  const auto c = static_cast<size_t>(column);
  return fmt::format("column {}{}", column + 1,
                     c < d.column_names.size() && !d.column_names[c].empty() ? " \"" + d.column_names[c] + "\"" : "");
}

// A label column that reads like a feature, beside a feature that reads like a label: the label
// column's largest class holds most rows, some of its classes are rare (under 1% of the rows), and
// it has more classes than another column whose values are few non-negative integers, each held by
// a fair share of the rows (within half to twice an even split), as a label's are. A pixel of an
// image taken for the label (the label is the first column) looks like this. A real imbalanced
// label rarely does: a binary one never (the other column would need fewer than two values), nor
// one whose rarest class holds 1% of the rows or more. Only for the default label column: a column
// the config names is trusted. Returns "" or the refusal.
std::string feature_like_label(const Dataset& d) {
  long top = 0, rarest = d.n, distinct = 0;
  for (long c : d.class_counts) {
    if (c > 0) {
      top = std::max(top, c);
      rarest = std::min(rarest, c);
      ++distinct;
    }
  }
  if (distinct < 3 || 2 * top < d.n || 100 * rarest >= d.n) {
    return "";
  }
  long best = -1;
  double best_spread = 0;
  std::map<long, long> best_counts;
  for (long f = 0; f < d.features; ++f) {
    auto counts = small_integer_values(d, f, static_cast<size_t>(distinct - 1));
    if (counts.size() < 2) {
      continue;
    }
    const double even = static_cast<double>(d.n) / static_cast<double>(counts.size());
    long lo = d.n, hi = 0;
    for (const auto& [value, n] : counts) {
      lo = std::min(lo, n);
      hi = std::max(hi, n);
    }
    if (lo < 0.5 * even || hi > 2.0 * even) {
      continue;
    }
    const double spread = static_cast<double>(hi) / static_cast<double>(lo);
    if (best < 0 || spread < best_spread) {
      best = f;
      best_spread = spread;
      best_counts = std::move(counts);
    }
  }
  if (best < 0) {
    return "";
  }
  const long column = best < d.label_column ? best : best + 1; // the label column is not among the features
  long lo = d.n, hi = 0;
  for (const auto& [value, n] : best_counts) {
    lo = std::min(lo, n);
    hi = std::max(hi, n);
  }
  const auto top_class = std::max_element(d.class_counts.begin(), d.class_counts.end()) - d.class_counts.begin();
  return fmt::format("{} (the default data.label_column, the last) looks like a feature, not a label: its class {} "
                     "holds {} of {} rows and others as few as {}, while {} has {} values held by {} to {} rows each, "
                     "as a label column has; if {} is the label, set data.label_column to {}; to train on {} as it "
                     "is, give data.label_column ({})",
                     column_phrase(d, d.label_column), top_class, top, d.n, rarest, column_phrase(d, column),
                     best_counts.size(), lo, hi, column_phrase(d, column), column, column_phrase(d, d.label_column),
                     d.label_column);
}

// A column of labels has few distinct values, each seen more than once. A feature read as the
// label (the label is in another column) has many, or values seen once each: refuse it rather than
// train silently on the wrong target.
void check_label_column(const Dataset& d, long configured_column, bool column_given, const std::string& where) {
  long distinct = 0;
  std::vector<long> singles;
  for (size_t c = 0; c < d.class_counts.size(); ++c) {
    distinct += d.class_counts[c] > 0 ? 1 : 0;
    if (d.class_counts[c] == 1) {
      singles.push_back(static_cast<long>(c));
    }
  }
  const long limit = std::max(20L, d.n / 10);
  const std::string column = fmt::format("column {}{} (data.label_column is {})", d.label_column + 1,
                                         d.label_name.empty() ? "" : " \"" + d.label_name + "\"", configured_column);
  const char* hint = "is the label in another column? data.label_column picks it (0 the first, -1 the last)";
  if (distinct > limit) {
    throw Error(where, fmt::format("{} has {} distinct labels in {} rows, more than a label column has "
                                   "(at most max(20, rows/10) = {}); {}",
                                   column, distinct, d.n, limit, hint));
  }
  if (singles.size() >= 2) {
    throw Error(where, fmt::format("{}: {} classes have a single sample each (labels {}, {}{}); {}", column,
                                   singles.size(), singles[0], singles[1], singles.size() > 2 ? ", ..." : "", hint));
  }
  if (!column_given) {
    if (std::string why = feature_like_label(d); !why.empty()) {
      throw Error(where, why);
    }
  }
}

// A feature column that holds unique integers, increasing from row to row in file order, reads
// like a row ID (or a row number): trained as a feature, it lets a model learn the order of the
// rows (sorted by class, as many published tables are, it predicts the label). Not refused (a time
// index is a feature some want), but said. At least 20 rows; one warning per such column.
std::vector<std::string> id_column_warnings(const Dataset& d) {
  std::vector<std::string> out;
  if (d.n < 20) {
    return out;
  }
  for (long f = 0; f < d.features; ++f) {
    bool id = true;
    for (long i = 0; i < d.n && id; ++i) {
      const float v = d.x[static_cast<size_t>(i * d.features + f)];
      id = v == std::floor(v) && (i == 0 || v > d.x[static_cast<size_t>((i - 1) * d.features + f)]);
    }
    if (!id) {
      continue;
    }
    const long column = f < d.label_column ? f : f + 1; // the label column is not among the features
    out.push_back(fmt::format("{} holds unique integers increasing from row to row ({} to {}), as a row ID does: it "
                              "is trained as a feature, from which a model can learn the order of the rows; remove "
                              "it from the CSV if it is an ID",
                              column_phrase(d, column), d.x[static_cast<size_t>(f)],
                              d.x[static_cast<size_t>((d.n - 1) * d.features + f)]));
  }
  return out;
}

} // namespace

std::pair<long, long> class_count_range(const Dataset& d) {
  if (d.class_counts.empty()) {
    return {0, 0};
  }
  auto [lo, hi] = std::minmax_element(d.class_counts.begin(), d.class_counts.end());
  return {*lo, *hi};
}

std::string describe_data(const Dataset& d, long validation_rows) {
  auto [lo, hi] = class_count_range(d);
  std::string sizes = lo == hi ? fmt::format("{} samples each", lo) : fmt::format("{} to {} samples each", lo, hi);
  std::string label;
  if (d.label_column >= 0) {
    label = fmt::format(", label column {}{}", d.label_column + 1, d.label_name.empty() ? "" : " \"" + d.label_name + "\"");
  }
  return fmt::format("{} rows, {} features, {} classes ({}){}; {} rows held out for validation", d.n, d.features,
                     d.classes, sizes, label, validation_rows);
}

Dataset load_dataset(Config& cfg, ThreadPool* pool) {
  DataConfig& dc = cfg.data;
  std::vector<std::string> left;
  if (dc.kind != "synthetic" && dc.classes == 0) {
    left.push_back("data.classes");
  }
  if (dc.kind == "csv" && dc.header == "auto") {
    left.push_back("data.header");
  }
  if (dc.kind == "csv" && dc.label_column < 0) {
    left.push_back("data.label_column");
  }
  Dataset d;
  if (dc.kind == "synthetic") {
    d = make_synthetic(dc, data_seed(cfg), pool);
  } else if (dc.kind == "csv") {
    const std::string root = resolve_data_path(cfg, dc.path);
    const long configured_column = dc.label_column;
    auto files = csv_files(root);
    d = read_csv(files, dc.label_column, dc.header, dc.classes);
    std::vector<std::string> names;
    std::error_code ec;
    const bool is_dir = fs::is_directory(root, ec);
    for (const auto& f : files) {
      names.push_back(is_dir ? display_path(f, root) : fs::path(f).filename().string());
    }
    d.class_counts = count_classes(d);
    check_label_column(d, configured_column, dc.label_column_given, files.size() == 1 ? files[0] : root);
    d.warnings = id_column_warnings(d);
    fingerprint_files(d, files, names);
  } else {
    std::string images = resolve_data_path(cfg, dc.images);
    std::string labels = resolve_data_path(cfg, dc.labels);
    d = read_idx(images, labels, dc.classes);
    fingerprint_files(d, {images, labels},
                      {fs::path(images).filename().string(), fs::path(labels).filename().string()});
  }
  dc.classes = d.classes;
  if (d.class_counts.empty()) {
    d.class_counts = count_classes(d);
  }
  d.left_to_data = std::move(left);
  return d;
}

Split split_dataset(const Dataset& d, double validation_fraction, uint64_t seed) {
  std::vector<uint32_t> perm(static_cast<size_t>(d.n));
  for (size_t i = 0; i < perm.size(); ++i) {
    perm[i] = static_cast<uint32_t>(i);
  }
  // Fisher-Yates from the last position down; draw i depends only on (seed, i).
  for (size_t i = perm.size(); i > 1; --i) {
    Philox4 r = draw(seed, Stream::split, static_cast<uint32_t>(i - 1));
    std::swap(perm[i - 1], perm[to_below(r[0], r[1], static_cast<uint32_t>(i))]);
  }
  size_t n_val = static_cast<size_t>(std::floor(validation_fraction * static_cast<double>(d.n)));
  Split s;
  s.val.assign(perm.begin(), perm.begin() + static_cast<long>(n_val));
  s.train.assign(perm.begin() + static_cast<long>(n_val), perm.end());
  return s;
}

std::vector<uint32_t> epoch_order(size_t n, uint64_t seed, long epoch, bool shuffle) {
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) {
    order[i] = static_cast<uint32_t>(i);
  }
  if (!shuffle) {
    return order;
  }
  for (size_t i = n; i > 1; --i) {
    Philox4 r = draw(seed, Stream::shuffle, static_cast<uint32_t>(epoch), static_cast<uint32_t>(i - 1));
    std::swap(order[i - 1], order[to_below(r[0], r[1], static_cast<uint32_t>(i))]);
  }
  return order;
}

void normalize_standard(Dataset& d, const Split& s) {
  const size_t f = static_cast<size_t>(d.features);
  std::vector<double> mean(f, 0.0), var(f, 0.0);
  if (s.train.empty()) {
    return;
  }
  for (uint32_t i : s.train) {
    const float* x = &d.x[i * f];
    for (size_t j = 0; j < f; ++j) {
      mean[j] += x[j];
    }
  }
  const double n = static_cast<double>(s.train.size());
  for (size_t j = 0; j < f; ++j) {
    mean[j] /= n;
  }
  for (uint32_t i : s.train) {
    const float* x = &d.x[i * f];
    for (size_t j = 0; j < f; ++j) {
      double dx = x[j] - mean[j];
      var[j] += dx * dx;
    }
  }
  std::vector<float> m(f), inv(f);
  for (size_t j = 0; j < f; ++j) {
    double sd = std::sqrt(var[j] / n);
    m[j] = static_cast<float>(mean[j]);
    inv[j] = sd > 1e-12 ? static_cast<float>(1.0 / sd) : 1.0f;
  }
  for (long i = 0; i < d.n; ++i) {
    float* x = &d.x[static_cast<size_t>(i) * f];
    for (size_t j = 0; j < f; ++j) {
      x[j] = (x[j] - m[j]) * inv[j];
    }
  }
}

} // namespace reprun
