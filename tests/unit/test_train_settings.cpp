// The execution-settings list (train/settings.hpp): what it leaves out of the result digest, and
// the first key where two resolved configs differ in what counts.
#include "reprun/train/config.hpp"
#include "reprun/train/settings.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace reprun;

namespace {
std::string resolved(const std::string& text, const std::vector<std::string>& sets = {}) {
  return config_to_json(parse_config(text, "c.json", "/base", sets)).dump();
}
} // namespace

TEST_CASE("settings: the evaluation batch size is an execution setting") {
  CHECK(is_execution_setting("training.eval_batch_size"));
  CHECK(is_execution_setting("training.accumulation"));
  CHECK_FALSE(is_execution_setting("training.batch_size"));
  CHECK_FALSE(is_execution_setting("training.eval_batch"));
  const std::string base = R"({"seed":1,"determinism":{"threads":2}})";
  CHECK(result_config_digest(resolved(base)) == result_config_digest(resolved(base, {"training.eval_batch_size=1"})));
  CHECK(result_config_digest(resolved(base)) != result_config_digest(resolved(base, {"training.batch_size=8"})));
}

TEST_CASE("settings: the first difference that counts names the key and both values") {
  const std::string base = R"({"seed":1,"determinism":{"threads":2}})";
  CHECK_FALSE(first_result_difference(resolved(base), resolved(base)).has_value());
  // Execution settings do not count.
  CHECK_FALSE(first_result_difference(resolved(base), resolved(base, {"training.epochs=7", "determinism.threads=3",
                                                                      "training.eval_batch_size=5"}))
                  .has_value());
  auto d = first_result_difference(resolved(base), resolved(base, {"optimizer.lr=0.1"}));
  REQUIRE(d.has_value());
  CHECK(d->key == "optimizer.lr");
  CHECK(d->a == "0.05");
  CHECK(d->b == "0.1");
  // The first in config order: data before optimizer.
  d = first_result_difference(resolved(base), resolved(base, {"optimizer.lr=0.1", "data.classes=3"}));
  REQUIRE(d.has_value());
  CHECK(d->key == "data.classes");
  // A key only one side has (Adam's betas against SGD's momentum), and whole arrays.
  d = first_result_difference(resolved(base), resolved(base, {"optimizer.name=adam"}));
  REQUIRE(d.has_value());
  CHECK(d->key == "optimizer.name");
  d = first_result_difference(R"({"optimizer":{"lr":1}})", R"({"optimizer":{"lr":1,"eps":2}})");
  REQUIRE(d.has_value());
  CHECK(d->key == "optimizer.eps");
  CHECK(d->a == "(absent)");
  CHECK(d->b == "2");
  d = first_result_difference(R"({"optimizer":{"lr":1,"momentum":0.9}})", R"({"optimizer":{"lr":1}})");
  REQUIRE(d.has_value());
  CHECK(d->key == "optimizer.momentum");
  CHECK(d->b == "(absent)");
  d = first_result_difference(resolved(base), resolved(base, {"model.hidden=[64,8]"}));
  REQUIRE(d.has_value());
  CHECK(d->key == "model.hidden");
  CHECK(d->a == "[64]");
  CHECK(d->b == "[64,8]");
}

TEST_CASE("settings: the result digest key by key names what an edit changed, execution settings left out") {
  const std::string base = R"({"seed":1,"optimizer":{"lr":0.05,"momentum":0.9},"model":{"hidden":[64]},
                               "training":{"batch_size":32,"accumulation":1},"determinism":{"threads":2}})";
  const auto recorded = result_key_digests(base);
  CHECK(recorded.count("optimizer.lr") == 1);
  CHECK(recorded.count("model.hidden") == 1); // an array is one leaf
  CHECK(recorded.count("training.accumulation") == 0);
  CHECK(recorded.count("determinism.threads") == 0);
  CHECK(recorded.at("optimizer.lr").size() == 16);
  CHECK(keys_not_matching(base, recorded).empty());
  // The same values written by another JSON writer (other spacing) match.
  CHECK(keys_not_matching(nlohmann::ordered_json::parse(base).dump(2), recorded).empty());
  const std::string edited = R"({"seed":1,"optimizer":{"lr":0.1,"momentum":0.9,"eps":1e-8},"model":{"hidden":[64]},
                                 "training":{"batch_size":32,"accumulation":4},"determinism":{"threads":1}})";
  CHECK(keys_not_matching(edited, recorded) == std::vector<std::string>{"optimizer.eps", "optimizer.lr"});
  CHECK(result_config_digest(edited) != result_config_digest(base));
}
