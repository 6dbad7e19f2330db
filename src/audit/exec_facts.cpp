// What the causes of a diff read of two exec runs' manifests: see audit/exec_facts.hpp.
#include "audit/exec_facts.hpp"

#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace reprun {

using ojson = nlohmann::ordered_json;

bool inputs_recorded(const ojson& m) {
  return m.is_object() && m.contains("inputs") && m["inputs"].is_object() && m["inputs"].contains("recorded") &&
         m["inputs"]["recorded"].is_string();
}

bool same_exec(const DiffResult& r) {
  auto work_dir = [](const ojson& m) {
    const ojson* p = m.is_object() && m.contains("program") && m["program"].is_object() ? &m["program"] : nullptr;
    return p && p->contains("run_dir") && (*p)["run_dir"].is_string()
               ? std::filesystem::path((*p)["run_dir"].get<std::string>()).parent_path().string()
               : std::string();
  };
  const std::string a = work_dir(r.a.manifest), b = work_dir(r.b.manifest);
  return !a.empty() && a == b;
}

std::string interpreter_phrase(const ojson& m) {
  const ojson* p = m.is_object() && m.contains("program") && m["program"].is_object() &&
                           m["program"].contains("interpreter") && m["program"]["interpreter"].is_object()
                       ? &m["program"]["interpreter"]
                       : nullptr;
  auto text = [&](const char* key) {
    return p && p->contains(key) && (*p)[key].is_string() ? (*p)[key].get<std::string>() : std::string("?");
  };
  return fmt::format("{} ({})", text("path"), text("version"));
}

std::string distributions_phrase(const DiffResult& r) {
  long packages = 0;
  std::string count;
  for (const auto& m : r.meta) {
    if (m.key.rfind("framework.distributions.packages", 0) == 0 && m.kind != MetaDelta::Kind::ignored) {
      ++packages;
    } else if (m.key == "framework.distributions.count") {
      count = m.a + " -> " + m.b + " installed";
    }
  }
  if (packages == 0 && count.empty()) {
    return "";
  }
  return fmt::format("; with it, its installed distributions differ ({}{}{} {} in name or version)", count,
                     count.empty() ? "" : ", ", packages, packages == 1 ? "differs" : "differ");
}

} // namespace reprun
