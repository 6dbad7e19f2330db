// Execution settings: the keys of the resolved config that, by the determinism guarantees
// (docs/determinism.md), cannot change a single bit of a run's steps. Declared once here and read
// by everything that must agree on them: the result digest that binds checkpoints and resumes
// (result_config_digest), the settings a resumed or forked run may change (--set with --resume),
// and the metadata diff, which shows them as "not counted" and never fails on them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace reprun {

struct ExecutionSetting {
  const char* key; // dotted key in the resolved config: "determinism.threads"
  const char* why; // why it cannot change a result
};

// In config order.
const std::vector<ExecutionSetting>& execution_settings();

// True when `dotted_key` ("training.accumulation") is an execution setting, or lies inside one.
bool is_execution_setting(std::string_view dotted_key);

// Manifest keys derived only from execution settings (the planned run length): "plan.total_steps".
const std::vector<std::string>& derived_execution_keys();

// Digest of the resolved config without the execution settings: checkpoints are bound to it, and
// a run may be resumed or forked only under a config with the same digest.
std::string result_config_digest(const std::string& resolved_config_json);

// What result_config_digest digests, key by key: every leaf of the resolved config without the
// execution settings ("optimizer.lr"; an array is one leaf), with the XXH3-64 of its JSON text, as
// 16 hex digits. A run records them beside its digest (manifest "config_key_digests"), so that a
// config that no longer matches its digest can name the key that changed.
std::map<std::string, std::string> result_key_digests(const std::string& resolved_config_json);
// The keys whose value in `resolved_config_json` does not match `recorded` (result_key_digests of
// the config the run started with), keys only one side has included, in key order.
std::vector<std::string> keys_not_matching(const std::string& resolved_config_json,
                                           const std::map<std::string, std::string>& recorded);

// Where two resolved configs differ in what counts for the result (execution settings left out):
// the dotted key and both values as JSON ("(absent)" for a missing key).
struct ConfigDifference {
  std::string key;
  std::string a;
  std::string b;
};
// The first difference in the order of `a`'s keys (then keys only `b` has); nullopt when the
// result digests of the two are equal.
std::optional<ConfigDifference> first_result_difference(const std::string& a_json, const std::string& b_json);

} // namespace reprun
