// `reprun env [--json] [--env-allow PATTERN]...`: what this machine would record in a manifest.
#include "cli/cli.hpp"

#include "reprun/meta/snapshot.hpp"
#include "reprun/meta/world.hpp"
#include "reprun/train/backend.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace reprun::cli {

namespace {
struct EnvFlags {
  bool json = false;
  std::vector<std::string> allow;
};

std::string text_value(const nlohmann::ordered_json& v) {
  if (v.is_null()) {
    return "(unset)";
  }
  if (v.is_string()) {
    return v.get<std::string>();
  }
  return v.dump();
}

void print_tree(const nlohmann::ordered_json& j, const std::string& indent, std::string& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it->is_object() && !it->empty()) {
      out += fmt::format("{}{}:\n", indent, it.key());
      print_tree(*it, indent + "  ", out);
    } else if (it->is_array() && !it->empty() && (*it)[0].is_object()) {
      out += fmt::format("{}{}:\n", indent, it.key());
      for (const auto& e : *it) {
        out += indent + "  -\n";
        print_tree(e, indent + "    ", out);
      }
    } else {
      out += fmt::format("{}{}: {}\n", indent, it.key(), text_value(*it));
    }
  }
}

int run(const EnvFlags& f) {
  SnapshotOptions opt;
  opt.env_allow = f.allow;
  opt.kernels = kernel_facts();
  nlohmann::ordered_json s = machine_snapshot(real_world(), opt);
  if (f.json) {
    std::cout << s.dump(2) << "\n";
  } else {
    std::string out;
    print_tree(s, "", out);
    std::cout << out;
  }
  return 0;
}
} // namespace

Action add_env(CLI::App& sub) {
  auto f = std::make_shared<EnvFlags>();
  sub.add_flag("--json", f->json, "Print JSON (the manifest's reprun, host, gpu, env and code sections)");
  sub.add_option("--env-allow", f->allow, "Also record environment variables matching PATTERN (glob, e.g. MY_*)");
  return [f] { return run(*f); };
}

} // namespace reprun::cli
