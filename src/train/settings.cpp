// The execution-settings list: see include/reprun/train/settings.hpp.
#include "reprun/train/settings.hpp"

#include "reprun/core/hash.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace reprun {

const std::vector<ExecutionSetting>& execution_settings() {
  static const std::vector<ExecutionSetting> k_list = {
      {"training.epochs", "the run length: a checkpoint at step s continues any longer run"},
      {"training.steps", "the run length: a checkpoint at step s continues any longer run"},
      {"training.accumulation",
       "ordered reduction is one chain per gradient element in sample order, whatever the micro-batch split"},
      {"training.checkpoint_every", "checkpoints save state; they never change it"},
      {"training.checkpoint_keep", "checkpoints save state; they never change it"},
      {"training.eval_every", "evaluation reads the weights; it never changes them"},
      {"training.eval_batch_size",
       "evaluation reads the weights, and sums each row's loss in row order whatever the batch"},
      {"determinism.threads", "work is split in fixed chunks and reduced in a fixed order"},
      {"determinism.ranks",
       "MPI ranks continue each gradient element's one chain in sample order; they move bytes, never add floats"},
      {"determinism.trace", "the trace level changes what is logged, not what is computed"},
      {"determinism.device",
       "the CUDA kernels compute every element as the CPU does: the same fused multiply-add chains in the same "
       "order, the same float64 loss, exp, log and tanh from one source"},
  };
  return k_list;
}

bool is_execution_setting(std::string_view key) {
  for (const auto& s : execution_settings()) {
    std::string_view k = s.key;
    if (key == k || (key.size() > k.size() && key.substr(0, k.size()) == k && key[k.size()] == '.')) {
      return true;
    }
  }
  return false;
}

const std::vector<std::string>& derived_execution_keys() {
  static const std::vector<std::string> k_keys = {"plan.total_steps"};
  return k_keys;
}

namespace {

using ojson = nlohmann::ordered_json;

ojson without_execution_settings(const std::string& resolved_config_json) {
  ojson c = ojson::parse(resolved_config_json);
  for (const auto& s : execution_settings()) {
    std::string_view key = s.key;
    auto dot = key.find('.');
    std::string section(key.substr(0, dot));
    if (c.contains(section) && c[section].is_object()) {
      c[section].erase(std::string(key.substr(dot + 1)));
    }
  }
  return c;
}

// The first leaf (in a's key order, then b's keys a lacks) where a and b differ.
std::optional<ConfigDifference> first_difference(const ojson& a, const ojson& b, const std::string& prefix) {
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
      if (!b.contains(it.key())) {
        return ConfigDifference{key, it->dump(), "(absent)"};
      }
      if (auto d = first_difference(*it, b[it.key()], key)) {
        return d;
      }
    }
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (!a.contains(it.key())) {
        return ConfigDifference{prefix.empty() ? it.key() : prefix + "." + it.key(), "(absent)", it->dump()};
      }
    }
    return std::nullopt;
  }
  if (a.dump() != b.dump()) {
    return ConfigDifference{prefix, a.dump(), b.dump()};
  }
  return std::nullopt;
}

void key_digests(const ojson& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      key_digests(*it, prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    }
    return;
  }
  const std::string text = j.dump();
  out[prefix] = hex64(xxh3_64(text.data(), text.size()));
}

} // namespace

std::map<std::string, std::string> result_key_digests(const std::string& resolved_config_json) {
  std::map<std::string, std::string> out;
  key_digests(without_execution_settings(resolved_config_json), "", out);
  return out;
}

std::vector<std::string> keys_not_matching(const std::string& resolved_config_json,
                                           const std::map<std::string, std::string>& recorded) {
  const auto now = result_key_digests(resolved_config_json);
  std::vector<std::string> keys;
  for (const auto& [key, digest] : now) {
    const auto it = recorded.find(key);
    if (it == recorded.end() || it->second != digest) {
      keys.push_back(key);
    }
  }
  for (const auto& [key, digest] : recorded) {
    if (!now.count(key)) {
      keys.push_back(key);
    }
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::string result_config_digest(const std::string& resolved_config_json) {
  return sha256_hex(without_execution_settings(resolved_config_json).dump());
}

std::optional<ConfigDifference> first_result_difference(const std::string& a_json, const std::string& b_json) {
  return first_difference(without_execution_settings(a_json), without_execution_settings(b_json), "");
}

} // namespace reprun
