// `reprun hash PATH... [--json] [--explain] [--no-cache] [--exclude GLOB]... [-L] [--threads N]`
#include "cli/cli.hpp"

#include "reprun/meta/fingerprint.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

namespace reprun::cli {

namespace {
struct HashFlags {
  std::vector<std::string> paths;
  bool json = false;
  bool explain = false;
  bool no_cache = false;
  bool follow = false;
  int threads = 0;
  std::vector<std::string> excludes;
};

int run(const HashFlags& f) {
  HashOptions opt;
  opt.use_cache = !f.no_cache;
  opt.follow_symlinks = f.follow;
  opt.excludes = f.excludes;
  opt.threads = f.threads;
  HashResult r = hash_paths(f.paths, opt);
  for (const auto& n : r.notes) {
    std::cerr << "reprun: note: " << n << "\n";
  }
  if (f.json) {
    nlohmann::ordered_json j;
    j["format"] = "reprun.hash/1";
    j["root"] = r.root;
    j["paths"] = f.paths;
    nlohmann::ordered_json files = nlohmann::ordered_json::array();
    for (const auto& e : r.entries) {
      if (e.type == "symlink") {
        files.push_back({{"path", e.path}, {"type", "symlink"}, {"target", e.target}});
      } else {
        files.push_back({{"path", e.path}, {"type", "file"}, {"size", e.size}, {"sha256", e.sha256}});
      }
    }
    j["files"] = files;
    j["total_bytes"] = r.total_bytes;
    j["skipped"] = r.notes;
    j["cache"] = {{"hits", r.cache_hits}, {"misses", r.cache_misses}, {"file", opt.use_cache ? hash_cache_file(opt) : ""}};
    std::cout << j.dump(2) << "\n";
  } else {
    if (f.explain) {
      std::string transcript;
      tree_root(r.entries, &transcript);
      std::cout << transcript;
    }
    std::cout << fmt::format("{}  ({} entr{}, {} bytes)\n", r.root, r.entries.size(), r.entries.size() == 1 ? "y" : "ies",
                             r.total_bytes);
  }
  return 0;
}
} // namespace

Action add_hash(CLI::App& sub) {
  auto f = std::make_shared<HashFlags>();
  sub.add_option("PATHS", f->paths, "Files and directories to fingerprint")->required();
  sub.add_flag("--json", f->json, "List every file with its size and SHA-256");
  sub.add_flag("--explain", f->explain, "Print the transcript of what went into the root");
  sub.add_flag("--no-cache", f->no_cache, "Hash every file again; neither read nor write the cache");
  sub.add_option("--exclude", f->excludes, "Leave out paths matching GLOB (relative path or file name)");
  sub.add_flag("-L,--follow-symlinks", f->follow, "Hash the files symlinks point to instead of recording the links");
  sub.add_option("--threads", f->threads, "Threads (default: all cores)")->check(CLI::Range(1, 1024));
  return [f] { return run(*f); };
}

} // namespace reprun::cli
