// The search section and trial sampling (train/search_space.hpp): values are pure functions of
// (experiment seed, k) inside their ranges; tpe reads only the history it is given; grid order;
// asha rungs; and the messages, each naming the file and the key.
#include "reprun/core/error.hpp"
#include "reprun/train/search_space.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

using namespace reprun;
using ojson = nlohmann::ordered_json;

namespace {

std::string with_search(const std::string& search) {
  return R"({"seed": 3, "data": {"kind": "synthetic", "samples": 200, "features": 4, "classes": 2},
             "training": {"epochs": 2}, "search": )" +
         search + "}";
}

SearchConfig parse(const std::string& search) { return parse_search_config(with_search(search), "s.json", "/base", {}); }

std::string error_of(const std::string& search) {
  try {
    parse(search);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const char* k_random = R"({"method": "random", "trials": 50, "space": {
  "optimizer.lr": {"log_uniform": [0.0001, 0.3]}, "model.dropout": {"uniform": [0.0, 0.5]},
  "training.batch_size": {"int_uniform": [8, 64]}, "model.hidden": {"choice": [[8], [16, 8]]}}})";

} // namespace

TEST_CASE("random trials: pure functions of (seed, k), inside their ranges, seeds distinct") {
  SearchConfig sc = parse(k_random);
  CHECK(sc.spec.trials == 50);
  CHECK(sc.spec.metric == "val_loss");
  CHECK_FALSE(sc.spec.maximize);
  std::set<uint64_t> seeds;
  std::set<std::string> lrs;
  for (long k = 0; k < 50; ++k) {
    TrialPoint a = sample_trial(sc.spec, 3, k), b = sample_trial(sc.spec, 3, k);
    CHECK(a.values == b.values);
    CHECK(a.seed == b.seed);
    CHECK(a.seed == trial_seed(3, k));
    const double lr = std::stod(a.values[0]);
    CHECK(lr >= 0.0001);
    CHECK(lr <= 0.3);
    const double dropout = std::stod(a.values[1]);
    CHECK(dropout >= 0.0);
    CHECK(dropout <= 0.5);
    const long bs = std::stol(a.values[2]);
    CHECK(bs >= 8);
    CHECK(bs <= 64);
    CHECK(a.values[2].find('.') == std::string::npos); // an integer, written as one
    CHECK((a.values[3] == "[8]" || a.values[3] == "[16,8]"));
    seeds.insert(a.seed);
    lrs.insert(a.values[0]);
  }
  CHECK(seeds.size() == 50);
  CHECK(lrs.size() == 50);
  // another experiment seed: other trials
  CHECK(sample_trial(sc.spec, 4, 0).values != sample_trial(sc.spec, 3, 0).values);
}

TEST_CASE("trial overrides: search off, trial seed, data seed = experiment seed, then each key") {
  SearchConfig sc = parse(k_random);
  TrialPoint p = sample_trial(sc.spec, 3, 5);
  auto sets = trial_overrides(sc.spec, 3, p);
  REQUIRE(sets.size() == 7);
  CHECK(sets[0] == "search=null");
  CHECK(sets[1] == "seed=" + std::to_string(p.seed));
  CHECK(sets[2] == "data.seed=3");
  CHECK(sets[3] == "optimizer.lr=" + p.values[0]);
  // the trial's config parses
  Config c = parse_config(sc.base_json, "s.json", "/base", sets);
  CHECK(c.seed == p.seed);
  CHECK(data_seed(c) == 3);
}

TEST_CASE("grid: the product of the axes, the last key fastest; ranges by points") {
  SearchConfig sc = parse(R"({"method": "grid", "space": {"optimizer.lr": {"log_uniform": [0.001, 0.1], "points": 3},
                              "model.activation": {"choice": ["relu", "tanh"]}}})");
  CHECK(sc.spec.trials == 6);
  std::vector<std::string> got;
  for (long k = 0; k < 6; ++k) {
    TrialPoint p = sample_trial(sc.spec, 3, k);
    got.push_back(p.values[1]);
    CHECK(p.sampler == "grid");
  }
  CHECK(got == std::vector<std::string>{"\"relu\"", "\"tanh\"", "\"relu\"", "\"tanh\"", "\"relu\"", "\"tanh\""});
  CHECK(sample_trial(sc.spec, 3, 0).values[0] == "0.001");
  CHECK(sample_trial(sc.spec, 3, 2).values[0] == "0.01"); // an inner log point, rounded to 15 digits
  CHECK(sample_trial(sc.spec, 3, 5).values[0] == "0.1");
  CHECK(error_of(R"({"method": "grid", "space": {"optimizer.lr": {"uniform": [0.1, 0.2]}}})")
            .find("s.json: search.space.optimizer.lr: a range in a grid needs \"points\"") == 0);
  CHECK(error_of(R"({"method": "grid", "trials": 7, "space": {"model.activation": {"choice": ["relu", "tanh"]}}})")
            .find("s.json: search.trials: must be between 1 and 2") == std::string::npos); // message below
  CHECK(error_of(R"({"method": "grid", "trials": 7, "space": {"model.activation": {"choice": ["relu", "tanh"]}}})")
            .find("s.json: search.trials: expected an integer between 1 and 2") == 0);
}

TEST_CASE("asha rungs: min_epochs * reduction^i, then max_epochs") {
  SearchConfig sc = parse(R"({"method": "asha", "trials": 9, "min_epochs": 1, "max_epochs": 20, "reduction": 3,
                              "space": {"optimizer.lr": {"log_uniform": [0.001, 0.1]}}})");
  CHECK(asha_rungs(sc.spec) == std::vector<long>{1, 3, 9, 20});
  CHECK(error_of(R"({"method": "asha", "trials": 9, "space": {"optimizer.lr": {"uniform": [0.1, 0.2]}}})")
            .find("s.json: search.max_epochs: missing (required for asha)") == 0);
  CHECK(error_of(R"({"method": "asha", "trials": 9, "max_epochs": 5,
                     "space": {"training.epochs": {"int_uniform": [1, 3]}}})")
            .find("s.json: search.space.training.epochs: cannot be searched: asha sets the run length") == 0);
}

TEST_CASE("tpe: random until `startup` results, then a pure function of the history it is given") {
  SearchConfig sc = parse(R"({"method": "tpe", "trials": 40, "batch": 2, "startup": 5, "space": {
    "optimizer.lr": {"log_uniform": [0.0001, 0.3]}, "model.hidden": {"choice": [[8], [16], [32]]}}})");
  CHECK(sc.spec.batch == 2);
  std::vector<TrialOutcome> history;
  for (long k = 0; k < 20; ++k) {
    TrialPoint p = sample_trial(sc.spec, 3, k, history);
    // a made-up objective: best near lr = 0.01 with [16]
    const double lr = std::stod(p.values[0]);
    const double metric = std::abs(std::log10(lr) + 2.0) + (p.values[1] == "[16]" ? 0.0 : 0.5);
    history.push_back({p, metric});
  }
  TrialPoint startup = sample_trial(sc.spec, 3, 20, {history.begin(), history.begin() + 4});
  CHECK(startup.sampler == "tpe-startup");
  CHECK(startup.values == sample_trial(sc.spec, 3, 20).values); // = the random method's trial 20
  TrialPoint a = sample_trial(sc.spec, 3, 20, history), b = sample_trial(sc.spec, 3, 20, history);
  CHECK(a.sampler == "tpe");
  CHECK(a.values == b.values);
  // the model helps: on a smooth made-up objective, the best of 60 tpe trials is far better than the
  // best of 60 random ones, on average over 10 experiment seeds
  auto best_of = [](const std::string& method, uint64_t seed) {
    SearchConfig c = parse(R"({"method": ")" + method + R"(", "trials": 60, "space": {
      "optimizer.lr": {"log_uniform": [0.0001, 0.3]}, "model.dropout": {"uniform": [0, 0.9]}}})");
    std::vector<TrialOutcome> h;
    double best = 1e300;
    for (long k = 0; k < 60; ++k) {
      TrialPoint p = sample_trial(c.spec, seed, k, h);
      const double lr = std::stod(p.values[0]), x = std::stod(p.values[1]);
      const double v = std::pow(std::log10(lr) + 2.0, 2) + 4 * std::pow(x - 0.3, 2);
      h.push_back({p, v});
      best = std::min(best, v);
    }
    return best;
  };
  double tpe = 0.0, random = 0.0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    tpe += best_of("tpe", seed);
    random += best_of("random", seed);
  }
  CHECK(tpe < random / 2);
  // a failed trial (no metric) is not a result
  std::vector<TrialOutcome> failed(10, TrialOutcome{sample_trial(sc.spec, 3, 0), std::nullopt});
  CHECK(sample_trial(sc.spec, 3, 20, failed).sampler == "tpe-startup");
}

TEST_CASE("every bad search section: one message naming the file and the key") {
  CHECK(error_of(R"({"method": "randm", "trials": 2, "space": {"optimizer.lr": {"uniform": [0.1, 0.2]}}})")
            .find("s.json: search.method: expected one of \"random\", \"grid\", \"asha\", \"tpe\", got \"randm\" (did "
                  "you mean 'random'?)") == 0);
  CHECK(error_of(R"({"trials": 2, "space": {}})").find("s.json: search.space: expected a non-empty object") == 0);
  CHECK(error_of(R"({"trials": 2})").find("s.json: search.space: missing (required)") == 0);
  CHECK(error_of(R"({"space": {"optimizer.lr": {"uniform": [0.1, 0.2]}}})").find("s.json: search.trials: missing") == 0);
  CHECK(error_of(R"({"trials": 2, "space": {"optimizer.lr": {"log_uniform": [0, 0.2]}}})")
            .find("s.json: search.space.optimizer.lr.log_uniform: a log-uniform range must be above 0") == 0);
  CHECK(error_of(R"({"trials": 2, "space": {"optimizer.lr": {"uniform": [0.2, 0.2]}}})")
            .find("s.json: search.space.optimizer.lr.uniform: empty range") == 0);
  CHECK(error_of(R"({"trials": 2, "space": {"optimizer.lr": {"uniform": [0.1, 0.2], "choice": [1]}}})")
            .find("s.json: search.space.optimizer.lr.choice: give one distribution") == 0);
  CHECK(error_of(R"({"trials": 2, "space": {"model.hidden": {"choice": [[8], [8]]}}})")
            .find("s.json: search.space.model.hidden.choice: the value [8] is listed twice") == 0);
  CHECK(error_of(R"({"trials": 2, "space": {"optimizer": {"choice": [1, 2]}}})")
            .find("s.json: search.space.optimizer: not a config key") == 0);
  CHECK(error_of(R"({"trials": 2, "space": {"seed": {"int_uniform": [1, 9]}}})")
            .find("s.json: search.space.seed: cannot be searched: set by the search") == 0);
  CHECK(error_of(R"({"trials": 2, "space": {"data.validation_fraction": {"uniform": [0.1, 0.3]}}})")
            .find("cannot be searched: it changes the data the metric is measured on") != std::string::npos);
  CHECK(error_of(R"({"trials": 2, "space": {"data.noise": {"uniform": [0.1, 0.3]}}})")
            .find("s.json: search.space.data.noise: cannot be searched: it changes the data") == 0);
  CHECK_NOTHROW(parse(R"({"trials": 2, "space": {"training.epochs": {"int_uniform": [1, 3]}}})"));
  CHECK(error_of(R"({"trials": 2, "space": {"optimizer.lr": {"uniform": [0.1, 0.2], "points": 3}}})")
            .find("s.json: search.space.optimizer.lr.points: read only for method \"grid\"") == 0);
  CHECK(error_of(R"({"trials": 2, "reduction": 3, "space": {"optimizer.lr": {"uniform": [0.1, 0.2]}}})")
            .find("s.json: search.reduction: read only for method \"asha\" (method is \"random\")") == 0);
  CHECK(error_of(R"({"trials": 2, "space": {"model.dropout": {"uniform": [0.1, 2.5]}}})")
            .find("s.json: search.space.model.dropout: the value 2.5 cannot be trained: model.dropout: must be") == 0);
  CHECK(error_of(R"({"trials": 2, "metric": "val_acuracy", "space": {"optimizer.lr": {"uniform": [0.1, 0.2]}}})")
            .find("(did you mean 'val_accuracy'?)") != std::string::npos);
  CHECK(error_of(R"([1])").find("s.json: search: expected an object") == 0);
  // train refuses a search config, and says how to train its base config
  try {
    parse_config(with_search(k_random), "s.json", "/base", {});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("s.json: search: this config describes a hyperparameter search") == 0);
  }
  CHECK_NOTHROW(parse_config(with_search(k_random), "s.json", "/base", {"search=null"}));
  // the validation split defines the metric
  try {
    parse_search_config(R"({"seed": 1, "data": {"validation_fraction": 0}, "search": )" + std::string(k_random) + "}",
                        "s.json", "/base", {});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("s.json: data.validation_fraction: the search's metric val_loss needs "
                                     "validation rows") == 0);
  }
}

TEST_CASE("the resolved search section: every default written") {
  SearchConfig sc = parse(R"({"method": "tpe", "trials": 8, "space": {"optimizer.lr": {"uniform": [0.1, 0.2]}}})");
  ojson j = search_spec_to_json(sc.spec);
  CHECK(j.dump() == R"({"method":"tpe","trials":8,"metric":"val_loss","direction":"min","space":{"optimizer.lr":{"uniform":[0.1,0.2]}},"batch":4,"startup":10,"candidates":24})");
  CHECK(config_has_search(with_search(k_random)));
  CHECK_FALSE(config_has_search("{\"search\": null}"));
  CHECK_FALSE(config_has_search("not json"));
}
