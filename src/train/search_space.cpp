// The search section and trial sampling: see include/reprun/train/search_space.hpp.
#include "reprun/train/search_space.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/train/mathfn.hpp"
#include "reprun/train/rng.hpp"
#include "reprun/train/settings.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

namespace reprun {

using ojson = nlohmann::ordered_json;

namespace {

const std::vector<std::string> k_methods = {"random", "grid", "asha", "tpe"};
const std::vector<std::string> k_kinds = {"uniform", "log_uniform", "int_uniform", "choice"};
const std::vector<std::string> k_metrics = {"val_loss", "val_accuracy"};

std::string show(const ojson& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

// Reads one object's keys, remembers which were read, and refuses the others.
class Keys {
public:
  Keys(const ojson& obj, std::string prefix, const std::string& source)
    : m_obj(obj), m_prefix(std::move(prefix)), m_source(source) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(m_source, fmt::format("{}{}: {}", m_prefix, key, what));
  }

  const ojson* find(const std::string& key) {
    m_known.push_back(key);
    auto it = m_obj.find(key);
    return it == m_obj.end() || it->is_null() ? nullptr : &*it;
  }

  long integer(const std::string& key, long def, long lo, long hi) {
    const ojson* v = find(key);
    if (!v) {
      return def;
    }
    if (!v->is_number_integer() || v->get<long>() < lo || v->get<long>() > hi) {
      fail(key, fmt::format("expected an integer between {} and {}, got {}", lo, hi, show(*v)));
    }
    return v->get<long>();
  }

  std::string choice(const std::string& key, const std::string& def, const std::vector<std::string>& options) {
    const ojson* v = find(key);
    if (!v) {
      return def;
    }
    std::string s = v->is_string() ? v->get<std::string>() : "";
    if (std::find(options.begin(), options.end(), s) == options.end()) {
      std::string list;
      for (const auto& o : options) {
        list += (list.empty() ? "\"" : ", \"") + o + "\"";
      }
      fail(key, fmt::format("expected one of {}, got {}{}", list, show(*v), did_you_mean(s, options)));
    }
    return s;
  }

  // Refuses a key this method does not read (it would be silently ignored).
  void only_for(const std::string& key, const std::string& method, const std::string& actual) {
    if (m_obj.contains(key) && method != actual) {
      fail(key, fmt::format("read only for method \"{}\" (method is \"{}\")", method, actual));
    }
  }

  void finish() const {
    for (auto it = m_obj.begin(); it != m_obj.end(); ++it) {
      if (std::find(m_known.begin(), m_known.end(), it.key()) == m_known.end()) {
        fail(it.key(), "unknown key" + did_you_mean(it.key(), m_known));
      }
    }
  }

private:
  const ojson& m_obj;
  std::string m_prefix;
  const std::string& m_source;
  std::vector<std::string> m_known;
};

// Why a config key cannot be searched over, or "" when it can.
std::string unsearchable(const std::string& key, const std::string& method) {
  if (key == "seed" || key == "data.seed") {
    return "set by the search: each trial gets its own seed from the experiment seed, and data.seed is the "
           "experiment seed in every trial";
  }
  if (key == "description" || key == "format" || key == "search") {
    return "not a hyperparameter";
  }
  if (key == "data.validation_fraction" || key == "data.kind" || key == "data.path" || key == "data.images" ||
      key == "data.labels" || key == "data.label_column" || key == "data.samples" || key == "data.features" ||
      key == "data.classes" || key == "data.noise") {
    return "it changes the data the metric is measured on";
  }
  if (key == "training.epochs" || key == "training.steps") {
    if (method == "asha") {
      return "asha sets the run length of each rung (min_epochs, max_epochs)";
    }
    return ""; // an execution setting for a resume, but the run length changes the final metric
  }
  if (key == "determinism.reduction") {
    return "\"atomic\" is non-deterministic by design: no trial could be trained again to the same bits, so the "
           "leaderboard would not be reproducible";
  }
  if (is_execution_setting(key)) {
    return "an execution setting: it cannot change a result (docs/determinism.md)";
  }
  return "";
}

bool is_section(const std::string& key) { return key.find('.') == std::string::npos && key != "seed" &&
                                                 key != "description" && key != "format"; }

std::string number_json(double x) { return ojson(x).dump(); }

// The value of `p` at coordinate `c` (the index for choice) as JSON text.
std::string value_text(const SearchParam& p, double c) {
  if (p.kind == "choice") {
    return p.choices[static_cast<size_t>(c)];
  }
  if (p.kind == "int_uniform") {
    return std::to_string(static_cast<long>(c));
  }
  return number_json(c);
}

// Checks that a trial could train with `key` = `value`: the base document with the value set parses.
void check_value(const ojson& base_doc, const std::string& source, const std::string& base_dir,
                 const std::string& key, const std::string& value, const std::vector<std::string>& extra) {
  ojson doc = base_doc;
  std::vector<std::string> sets = extra;
  sets.push_back(key + "=" + value);
  try {
    parse_config(doc.dump(), source, base_dir, sets);
  } catch (const Error& e) {
    std::string what = e.what();
    const std::string prefix = source + ": ";
    if (what.compare(0, prefix.size(), prefix) == 0) {
      what = what.substr(prefix.size());
    }
    throw Error(source, fmt::format("search.space.{}: the value {} cannot be trained: {}", key, value, what));
  }
}

double range_point(const SearchParam& p, long i, long n) {
  if (n == 1) {
    return p.lo;
  }
  const double f = static_cast<double>(i) / static_cast<double>(n - 1);
  if (p.kind == "log_uniform") {
    const double a = mathfn::log(p.lo), b = mathfn::log(p.hi);
    if (i == 0 || i == n - 1) {
      return i == 0 ? p.lo : p.hi;
    }
    // 15 significant digits (printf rounds correctly everywhere): 0.01, not 0.010000000000000005
    return std::strtod(fmt::format("{:.15g}", mathfn::exp(a + (b - a) * f)).c_str(), nullptr);
  }
  if (p.kind == "int_uniform") {
    return std::floor(p.lo + (p.hi - p.lo) * f + 0.5);
  }
  return i == n - 1 ? p.hi : p.lo + (p.hi - p.lo) * f;
}

// The grid's values of one key, as coordinates.
std::vector<double> grid_axis(const SearchParam& p) {
  std::vector<double> v;
  if (p.kind == "choice") {
    for (size_t i = 0; i < p.choices.size(); ++i) {
      v.push_back(static_cast<double>(i));
    }
    return v;
  }
  for (long i = 0; i < p.points; ++i) {
    double x = range_point(p, i, p.points);
    if (v.empty() || x != v.back()) {
      v.push_back(x);
    }
  }
  return v;
}

SearchParam parse_param(const std::string& key, const ojson& v, const std::string& source, const std::string& method) {
  const std::string where = "search.space." + key + ".";
  if (!v.is_object()) {
    throw Error(source, fmt::format("search.space.{}: expected an object such as {{\"uniform\": [0, 1]}}, got {}", key,
                                    show(v)));
  }
  Keys k(v, where, source);
  SearchParam p;
  p.key = key;
  for (const auto& kind : k_kinds) {
    if (k.find(kind)) {
      if (!p.kind.empty()) {
        k.fail(kind, fmt::format("give one distribution (\"{}\" is given too)", p.kind));
      }
      p.kind = kind;
    }
  }
  if (const ojson* pts = k.find("points")) {
    if (method != "grid") {
      k.fail("points", fmt::format("read only for method \"grid\" (method is \"{}\")", method));
    }
    if (p.kind == "choice") {
      k.fail("points", "a choice's grid points are its values");
    }
    if (!pts->is_number_integer() || pts->get<long>() < 2 || pts->get<long>() > 1000) {
      k.fail("points", fmt::format("expected an integer between 2 and 1000, got {}", show(*pts)));
    }
    p.points = pts->get<long>();
  }
  k.finish();
  if (p.kind.empty()) {
    throw Error(source, fmt::format("search.space.{}: give a distribution: uniform, log_uniform, int_uniform or choice",
                                    key));
  }
  const ojson& d = v[p.kind];
  if (p.kind == "choice") {
    if (!d.is_array() || d.empty()) {
      k.fail("choice", fmt::format("expected a non-empty list of values, got {}", show(d)));
    }
    for (const auto& c : d) {
      std::string text = c.dump();
      if (std::find(p.choices.begin(), p.choices.end(), text) != p.choices.end()) {
        k.fail("choice", fmt::format("the value {} is listed twice", show(c)));
      }
      p.choices.push_back(text);
    }
    return p;
  }
  if (!d.is_array() || d.size() != 2 || !d[0].is_number() || !d[1].is_number()) {
    k.fail(p.kind, fmt::format("expected [low, high], got {}", show(d)));
  }
  if (p.kind == "int_uniform" && (!d[0].is_number_integer() || !d[1].is_number_integer())) {
    k.fail(p.kind, fmt::format("expected two integers [low, high], got {}", show(d)));
  }
  p.lo = d[0].get<double>();
  p.hi = d[1].get<double>();
  if (!std::isfinite(p.lo) || !std::isfinite(p.hi) || !(p.lo < p.hi)) {
    k.fail(p.kind, fmt::format("empty range {}: low must be below high", show(d)));
  }
  if (p.kind == "log_uniform" && !(p.lo > 0.0)) {
    k.fail(p.kind, fmt::format("a log-uniform range must be above 0, got {}", show(d)));
  }
  if (method == "grid" && p.points == 0) {
    throw Error(source, fmt::format("search.space.{}: a range in a grid needs \"points\" (how many values)", key));
  }
  return p;
}

SearchSpec parse_spec(const ojson& s, const std::string& source) {
  if (!s.is_object()) {
    throw Error(source, fmt::format("search: expected an object {{...}}, got {}", show(s)));
  }
  static const std::vector<std::string> k_keys = {"method",     "trials",     "metric",    "direction",
                                                 "space",      "min_epochs", "max_epochs", "reduction",
                                                 "batch",      "startup",    "candidates"};
  for (auto it = s.begin(); it != s.end(); ++it) { // an unknown key first: it may be a misspelt required one
    if (std::find(k_keys.begin(), k_keys.end(), it.key()) == k_keys.end()) {
      throw Error(source, fmt::format("search.{}: unknown key{}", it.key(), did_you_mean(it.key(), k_keys)));
    }
  }
  Keys k(s, "search.", source);
  SearchSpec spec;
  spec.method = k.choice("method", "random", k_methods);
  spec.metric = k.choice("metric", "val_loss", k_metrics);
  spec.maximize = spec.metric == "val_accuracy";
  spec.maximize = k.choice("direction", spec.maximize ? "max" : "min", {"min", "max"}) == "max";
  for (const char* key : {"min_epochs", "max_epochs", "reduction"}) {
    k.only_for(key, "asha", spec.method);
  }
  for (const char* key : {"batch", "startup", "candidates"}) {
    k.only_for(key, "tpe", spec.method);
  }
  const ojson* space = k.find("space");
  if (!space) {
    k.fail("space", "missing (required): the hyperparameters to search, e.g. {\"optimizer.lr\": {\"log_uniform\": "
                    "[0.0001, 0.3]}}");
  }
  if (!space->is_object() || space->empty()) {
    k.fail("space", fmt::format("expected a non-empty object of config keys, got {}", show(*space)));
  }
  const auto& keys = config_keys();
  for (auto it = space->begin(); it != space->end(); ++it) {
    const std::string& key = it.key();
    if (std::find(keys.begin(), keys.end(), key) == keys.end() || is_section(key)) {
      throw Error(source, fmt::format("search.space.{}: not a config key{}", key, suggest_config_key(key)));
    }
    if (std::string why = unsearchable(key, spec.method); !why.empty()) {
      throw Error(source, fmt::format("search.space.{}: cannot be searched: {}", key, why));
    }
    spec.space.push_back(parse_param(key, *it, source, spec.method));
  }
  long grid_size = 1;
  if (spec.method == "grid") {
    for (const auto& p : spec.space) {
      grid_size *= static_cast<long>(grid_axis(p).size());
      if (grid_size > 100'000) {
        k.fail("space", "the grid has more than 100000 points");
      }
    }
  }
  const bool need_trials = spec.method != "grid";
  if (need_trials && !k.find("trials")) {
    k.fail("trials", "missing (required): how many trials to run");
  }
  spec.trials = k.integer("trials", grid_size, 1, need_trials ? 100'000 : grid_size);
  if (spec.method == "asha") {
    spec.min_epochs = k.integer("min_epochs", 1, 1, 1'000'000);
    if (!k.find("max_epochs")) {
      k.fail("max_epochs", "missing (required for asha): the budget of the last rung, in epochs");
    }
    spec.max_epochs = k.integer("max_epochs", 0, 1, 1'000'000);
    if (spec.max_epochs <= spec.min_epochs) {
      k.fail("max_epochs", fmt::format("must be above min_epochs ({}), got {}", spec.min_epochs, spec.max_epochs));
    }
    spec.reduction = k.integer("reduction", 3, 2, 1000);
  }
  if (spec.method == "tpe") {
    spec.batch = k.integer("batch", 4, 0, 100'000);
    spec.startup = k.integer("startup", 10, 1, 100'000);
    spec.candidates = k.integer("candidates", 24, 1, 10'000);
  }
  k.finish();
  return spec;
}

// ---- sampling ------------------------------------------------------------------------------------

double unit(const Philox4& r) { // (0, 1): never 0 or 1, for the inverse normal CDF and logs
  uint64_t v = (static_cast<uint64_t>(r[0]) << 21) ^ (r[1] >> 11);
  return (static_cast<double>(v & ((1ull << 53) - 1)) + 0.5) * (1.0 / 9007199254740992.0);
}

double random_coord(const SearchParam& p, const Philox4& r) {
  if (p.kind == "choice") {
    return static_cast<double>(to_below(r[0], r[1], static_cast<uint32_t>(p.choices.size())));
  }
  if (p.kind == "int_uniform") {
    const uint64_t n = static_cast<uint64_t>(p.hi - p.lo) + 1;
    const uint64_t v = (static_cast<uint64_t>(r[0]) << 32) | r[1];
    __extension__ typedef unsigned __int128 u128;
    return p.lo + static_cast<double>(static_cast<uint64_t>((static_cast<u128>(v) * n) >> 64));
  }
  const double u = to_unit_double(r[0], r[1]);
  if (p.kind == "log_uniform") {
    const double a = mathfn::log(p.lo), b = mathfn::log(p.hi);
    return std::clamp(mathfn::exp(a + (b - a) * u), p.lo, p.hi);
  }
  return std::clamp(p.lo + (p.hi - p.lo) * u, p.lo, p.hi);
}

// The standard normal quantile (Acklam's rational approximation, relative error below 1.2e-9),
// built from +, *, /, sqrt and mathfn::log only.
double normal_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  auto tail = [&](double q) {
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  };
  constexpr double plow = 0.02425;
  if (p < plow) {
    return tail(std::sqrt(-2.0 * mathfn::log(p)));
  }
  if (p > 1.0 - plow) {
    return -tail(std::sqrt(-2.0 * mathfn::log(1.0 - p)));
  }
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
}

// A Parzen estimator over one numeric key in its search coordinates (log for log_uniform, the
// integer range widened by 1/2 for int_uniform): a prior spanning the range and one Gaussian per
// observation, its width the larger gap to its neighbours, clipped as Optuna's TPE does.
struct Parzen {
  std::vector<double> mu, sigma; // [0] is the prior
  double lo = 0.0, hi = 0.0;

  Parzen(std::vector<double> obs, double lo_, double hi_) : lo(lo_), hi(hi_) {
    const double width = hi - lo;
    std::sort(obs.begin(), obs.end());
    mu.push_back(0.5 * (lo + hi));
    sigma.push_back(width);
    const double smallest = width / std::min(100.0, 1.0 + static_cast<double>(obs.size()));
    for (size_t i = 0; i < obs.size(); ++i) {
      const double left = i == 0 ? obs[i] - lo : obs[i] - obs[i - 1];
      const double right = i + 1 == obs.size() ? hi - obs[i] : obs[i + 1] - obs[i];
      mu.push_back(obs[i]);
      sigma.push_back(std::clamp(std::max(left, right), smallest, width));
    }
  }

  double log_density(double x) const {
    // log of the mean of the components' densities, by log-sum-exp
    std::vector<double> terms;
    double top = -std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < mu.size(); ++i) {
      const double z = (x - mu[i]) / sigma[i];
      terms.push_back(-0.5 * z * z - mathfn::log(sigma[i]));
      top = std::max(top, terms.back());
    }
    double sum = 0.0;
    for (double t : terms) {
      sum += mathfn::exp(t - top);
    }
    return top + mathfn::log(sum / static_cast<double>(mu.size()));
  }

  // Draw `j` of candidate sampling: a component, then a Gaussian draw inside [lo, hi].
  double sample(uint64_t seed, long k, uint32_t key, uint32_t j) const {
    for (uint32_t attempt = 0; attempt < 64; ++attempt) {
      Philox4 r = draw(seed, Stream::search, static_cast<uint32_t>(k), key, 1 + j * 64 + attempt);
      const size_t comp = to_below(r[0], r[1], static_cast<uint32_t>(mu.size()));
      Philox4 n{r[2], r[3], 0, 0};
      const double x = mu[comp] + sigma[comp] * normal_quantile(unit(n));
      if (x >= lo && x <= hi) {
        return x;
      }
    }
    return std::clamp(mu[0], lo, hi);
  }
};

// Search coordinates of a numeric key: (t_lo, t_hi) and the map to and from the key's values.
double to_search(const SearchParam& p, double v) { return p.kind == "log_uniform" ? mathfn::log(v) : v; }
double from_search(const SearchParam& p, double t) {
  if (p.kind == "log_uniform") {
    return std::clamp(mathfn::exp(t), p.lo, p.hi);
  }
  if (p.kind == "int_uniform") {
    return std::clamp(std::floor(t + 0.5), p.lo, p.hi);
  }
  return std::clamp(t, p.lo, p.hi);
}

// One key's tpe proposal: `candidates` draws from l (the good trials' estimator), the one with the
// largest l(x)/g(x) (the first of equals).
double tpe_coord(const SearchSpec& s, const SearchParam& p, uint32_t key, uint64_t seed, long k,
                 const std::vector<double>& good, const std::vector<double>& bad) {
  if (p.kind == "choice") {
    const size_t n = p.choices.size();
    std::vector<double> wl(n, 1.0), wg(n, 1.0); // a prior count of 1 per value
    for (double c : good) {
      wl[static_cast<size_t>(c)] += 1.0;
    }
    for (double c : bad) {
      wg[static_cast<size_t>(c)] += 1.0;
    }
    const double sl = static_cast<double>(n + good.size()), sg = static_cast<double>(n + bad.size());
    double best = 0.0, best_score = -std::numeric_limits<double>::infinity();
    for (long j = 0; j < s.candidates; ++j) {
      Philox4 r = draw(seed, Stream::search, static_cast<uint32_t>(k), key, 1 + static_cast<uint32_t>(j) * 64);
      double u = to_unit_double(r[0], r[1]) * sl, acc = 0.0;
      size_t c = 0;
      while (c + 1 < n && u >= acc + wl[c]) {
        acc += wl[c];
        ++c;
      }
      const double score = mathfn::log(wl[c] / sl) - mathfn::log(wg[c] / sg);
      if (score > best_score) {
        best_score = score;
        best = static_cast<double>(c);
      }
    }
    return best;
  }
  const double half = p.kind == "int_uniform" ? 0.5 : 0.0;
  const double tlo = to_search(p, p.lo) - half, thi = to_search(p, p.hi) + half;
  std::vector<double> g, b;
  for (double v : good) {
    g.push_back(to_search(p, v));
  }
  for (double v : bad) {
    b.push_back(to_search(p, v));
  }
  const Parzen l(g, tlo, thi), gb(b, tlo, thi);
  double best = l.mu[0], best_score = -std::numeric_limits<double>::infinity();
  for (long j = 0; j < s.candidates; ++j) {
    const double t = l.sample(seed, k, key, static_cast<uint32_t>(j));
    const double score = l.log_density(t) - gb.log_density(t);
    if (score > best_score) {
      best_score = score;
      best = t;
    }
  }
  return from_search(p, best);
}

} // namespace

std::vector<long> asha_rungs(const SearchSpec& s) {
  std::vector<long> r;
  for (long b = s.min_epochs; b < s.max_epochs; b *= s.reduction) {
    r.push_back(b);
  }
  r.push_back(s.max_epochs);
  return r;
}

bool config_has_search(const std::string& text) {
  try {
    ojson doc = ojson::parse(text);
    return doc.is_object() && doc.contains("search") && !doc["search"].is_null();
  } catch (const ojson::exception&) {
    return false;
  }
}

SearchConfig parse_search_config(const std::string& text, const std::string& source, const std::string& base_dir,
                                 const std::vector<std::string>& overrides) {
  ojson doc;
  try {
    doc = ojson::parse(text);
  } catch (const ojson::exception&) {
    parse_config(text, source, base_dir, overrides); // the config parser's message, with line and column
    throw;
  }
  if (!doc.is_object()) {
    throw Error(source, "expected a JSON object {...} at the top level");
  }
  refuse_duplicate_keys(text, source);
  for (const auto& o : overrides) {
    apply_override(doc, o);
  }
  if (!doc.contains("search") || doc["search"].is_null()) {
    throw Error(source, "search: missing: a search config has a \"search\" section (docs/config.md)");
  }
  SearchConfig sc;
  sc.source = source;
  sc.spec = parse_spec(doc["search"], source);
  doc.erase("search");
  sc.base = parse_config(doc.dump(), source, base_dir, {});
  if (sc.base.seed_drawn) {
    doc["seed"] = sc.base.seed; // the drawn experiment seed is part of the search from now on
  }
  sc.base_json = doc.dump();
  // a missing data file would fail every trial: refuse it before the search directory is made
  for (const auto& [key, path] : {std::pair{"data.path", sc.base.data.path}, {"data.images", sc.base.data.images},
                                  {"data.labels", sc.base.data.labels}}) {
    std::error_code ec;
    if (!path.empty() && !std::filesystem::exists(resolve_data_path(sc.base, path), ec)) {
      throw Error(source, fmt::format("{}: {}: no such file or directory", key, resolve_data_path(sc.base, path)));
    }
  }
  if (sc.base.determinism.reduction == "atomic") {
    throw Error(source, "determinism.reduction: \"atomic\" is non-deterministic by design: no trial could be trained "
                        "again to the same bits, so the search's leaderboard would not be reproducible; use "
                        "\"ordered\"");
  }
  if (sc.base.data.validation_fraction <= 0.0) {
    throw Error(source, fmt::format("data.validation_fraction: the search's metric {} needs validation rows; "
                                    "set it above 0", sc.spec.metric));
  }
  if (sc.spec.method == "asha" && doc.contains("training") && doc["training"].contains("steps") &&
      !doc["training"]["steps"].is_null()) {
    throw Error(source, "training.steps: asha sets each rung's run length in epochs (search.min_epochs, "
                        "search.max_epochs); remove training.steps");
  }
  std::vector<std::string> extra;
  if (sc.spec.method == "asha") {
    extra.push_back("training.epochs=" + std::to_string(sc.spec.max_epochs));
  }
  for (const auto& p : sc.spec.space) {
    std::vector<std::string> tries;
    if (p.kind == "choice") {
      tries = p.choices;
    } else {
      tries = {value_text(p, p.lo), value_text(p, p.hi)};
      if (p.kind != "int_uniform") {
        // an interior point that is no round number: a range over an integer key fails here, not in a trial
        const double f = 0.3819660112501051;
        tries.push_back(number_json(p.kind == "log_uniform" ? mathfn::exp(mathfn::log(p.lo) * (1 - f) + mathfn::log(p.hi) * f)
                                                           : p.lo + (p.hi - p.lo) * f));
      }
    }
    for (const auto& v : tries) {
      check_value(doc, source, base_dir, p.key, v, extra);
    }
  }
  return sc;
}

SearchConfig load_search_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::string text = read_file(path);
  std::filesystem::path p = std::filesystem::absolute(path);
  return parse_search_config(text, path, p.parent_path().string(), overrides);
}

ojson search_spec_to_json(const SearchSpec& s) {
  ojson j;
  j["method"] = s.method;
  j["trials"] = s.trials;
  j["metric"] = s.metric;
  j["direction"] = s.maximize ? "max" : "min";
  ojson space = ojson::object();
  for (const auto& p : s.space) {
    ojson d;
    if (p.kind == "choice") {
      ojson c = ojson::array();
      for (const auto& t : p.choices) {
        c.push_back(ojson::parse(t));
      }
      d["choice"] = c;
    } else if (p.kind == "int_uniform") {
      d[p.kind] = {static_cast<long>(p.lo), static_cast<long>(p.hi)};
    } else {
      d[p.kind] = {p.lo, p.hi};
    }
    if (p.points) {
      d["points"] = p.points;
    }
    space[p.key] = d;
  }
  j["space"] = space;
  if (s.method == "asha") {
    j["min_epochs"] = s.min_epochs;
    j["max_epochs"] = s.max_epochs;
    j["reduction"] = s.reduction;
    j["rungs"] = asha_rungs(s);
  }
  if (s.method == "tpe") {
    j["batch"] = s.batch;
    j["startup"] = s.startup;
    j["candidates"] = s.candidates;
  }
  return j;
}

uint64_t trial_seed(uint64_t experiment_seed, long k) {
  return draw(experiment_seed, Stream::trial_seed, static_cast<uint32_t>(k))[0] & 0x7fffffffu;
}

TrialPoint sample_trial(const SearchSpec& s, uint64_t seed, long k, const std::vector<TrialOutcome>& history) {
  TrialPoint t;
  t.k = k;
  t.seed = trial_seed(seed, k);
  if (s.method == "grid") {
    t.sampler = "grid";
    long rest = k;
    std::vector<double> coords(s.space.size());
    for (size_t i = s.space.size(); i-- > 0;) { // the last key varies fastest
      const auto axis = grid_axis(s.space[i]);
      coords[i] = axis[static_cast<size_t>(rest % static_cast<long>(axis.size()))];
      rest /= static_cast<long>(axis.size());
    }
    t.coords = coords;
  } else {
    std::vector<const TrialOutcome*> done;
    for (const auto& h : history) {
      if (h.metric) {
        done.push_back(&h);
      }
    }
    const bool model = s.method == "tpe" && static_cast<long>(done.size()) >= s.startup;
    t.sampler = s.method == "tpe" ? (model ? "tpe" : "tpe-startup") : "random";
    if (model) {
      // best first (ties: the lower trial index); the good group is the best ceil(n/10), at most 25
      std::stable_sort(done.begin(), done.end(), [&](const TrialOutcome* a, const TrialOutcome* b) {
        return s.maximize ? *a->metric > *b->metric : *a->metric < *b->metric;
      });
      const size_t n_good = std::min<size_t>(25, (done.size() + 9) / 10);
      for (size_t i = 0; i < s.space.size(); ++i) {
        std::vector<double> good, bad;
        for (size_t j = 0; j < done.size(); ++j) {
          (j < n_good ? good : bad).push_back(done[j]->point.coords[i]);
        }
        t.coords.push_back(tpe_coord(s, s.space[i], static_cast<uint32_t>(i), seed, k, good, bad));
      }
    } else {
      for (size_t i = 0; i < s.space.size(); ++i) {
        t.coords.push_back(
            random_coord(s.space[i], draw(seed, Stream::search, static_cast<uint32_t>(k), static_cast<uint32_t>(i), 0)));
      }
    }
  }
  for (size_t i = 0; i < s.space.size(); ++i) {
    t.values.push_back(value_text(s.space[i], t.coords[i]));
  }
  return t;
}

std::vector<std::string> trial_overrides(const SearchSpec& s, uint64_t experiment_seed, const TrialPoint& p) {
  std::vector<std::string> sets = {"search=null", "seed=" + std::to_string(p.seed),
                                   "data.seed=" + std::to_string(experiment_seed)};
  for (size_t i = 0; i < s.space.size(); ++i) {
    sets.push_back(s.space[i].key + "=" + p.values[i]);
  }
  return sets;
}

} // namespace reprun
