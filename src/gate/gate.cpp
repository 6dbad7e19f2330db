// The shared gate core: see include/reprun/gate/gate.hpp.
#include "reprun/gate/gate.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>

namespace reprun {

namespace fs = std::filesystem;

int count_runs(int requested, size_t longest_vary, int fewest) {
  int runs = requested > 0 ? requested : std::max<int>(2, static_cast<int>(std::min<size_t>(longest_vary, 1000)));
  if (runs < fewest || runs > 64) {
    throw Error("--runs", fmt::format("must be between {} and 64, got {}", fewest, runs));
  }
  return runs;
}

std::vector<std::string> plan_run_dirs(const std::string& work_dir, int runs, const char* command) {
  std::error_code ec;
  fs::create_directories(work_dir, ec);
  if (ec) {
    throw Error(work_dir, "cannot create work directory: " + ec.message());
  }
  std::vector<std::string> dirs;
  for (int i = 1; i <= runs; ++i) {
    std::string dir = (fs::path(work_dir) / fmt::format("run-{}", i)).string();
    if (fs::exists(fs::symlink_status(dir, ec))) {
      throw Error(dir, fmt::format("already exists; give {} an empty -o WORK_DIR", command));
    }
    dirs.push_back(dir);
  }
  return dirs;
}

void compare_runs(CheckResult& res, const DiffOptions& dopt, const std::function<void(CheckPair&)>& after_diff,
                  const std::string& pass,
                  const std::function<DiffResult(const std::string&, const std::string&)>& differ) {
  res.identical = true;
  long differing = 0;
  for (size_t i = 1; i < res.runs.size(); ++i) {
    CheckPair pair;
    pair.run = res.runs[i].index;
    pair.diff = differ ? differ(res.runs[0].dir, res.runs[i].dir) : diff_runs(res.runs[0].dir, res.runs[i].dir, dopt);
    if (after_diff) {
      after_diff(pair);
    }
    res.identical = res.identical && pair.diff.identical;
    differing += pair.diff.identical ? 0 : 1;
    res.pairs.push_back(std::move(pair));
  }
  if (res.identical) {
    res.verdict = "PASS: " + pass;
    return;
  }
  const auto& first =
      *std::find_if(res.pairs.begin(), res.pairs.end(), [](const CheckPair& p) { return !p.diff.identical; });
  const std::string where =
      first.localization && first.localization->found ? first.localization->sentence : first.diff.verdict;
  res.verdict = fmt::format("FAIL: {} of {} runs differ from run-1; run-{}: {}", differing, res.runs.size() - 1,
                            first.run, where);
}

std::string last_line(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error&) {
    return "";
  }
  while (!text.empty() && text.back() == '\n') {
    text.pop_back();
  }
  auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

} // namespace reprun
