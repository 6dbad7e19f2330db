// The execution-settings list (train/settings.hpp): what it leaves out of the result digest.
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
