// The search directory, format "reprun.search/1" (docs/run-format.md), written by `reprun search`.
// SearchDir is the one owner of its names:
//   search.json        what the search is: config file, overrides, experiment seed, the resolved
//                      search section and base config; written once when the search starts
//   trial-0007/        trial 7: an ordinary run directory (RunDir)
//   logs/trial-0007.log  what trial 7's training processes printed
//   leaderboard.json, leaderboard.txt, leaderboard.md, report.html
//                      the results, written atomically when the search completes; no timings, so
//                      two leaderboards of the same search compare byte for byte
//   timings.json       wall time of each trial and of the search (differs from run to run)
//   .lock              held (flock) by the one process running the search
#pragma once

#include "reprun/record/run_dir.hpp"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>

namespace reprun {

inline constexpr const char* k_search_format = "reprun.search/1";

enum class SearchFile { manifest, leaderboard_json, leaderboard_text, leaderboard_markdown, report_html, timings, lock };

class SearchDir {
public:
  // A new search directory at `path`: created, or an existing empty folder. Throws Error when it
  // holds anything (a search there continues with --resume).
  static SearchDir create(const std::string& path);
  // An existing search directory. Throws Error naming `path` when it holds no search.json.
  static SearchDir open(const std::string& path);
  // True when `path` is a directory holding search.json.
  static bool holds_search(const std::string& path);
  static const char* name(SearchFile f);

  const std::string& path() const { return m_path; }
  std::string file(SearchFile f) const;
  // trial-NNNN (four digits at least), and its training log under logs/ (the folder is created).
  std::string trial_dir(long k) const;
  std::string trial_log(long k) const;

  RunLock lock() const;
  void write_manifest(const nlohmann::ordered_json& m) const;
  // Reads and checks search.json (JSON object, format); throws Error naming the file.
  nlohmann::ordered_json read_manifest() const;
  // Writes one of the result files atomically.
  void write(SearchFile f, std::string_view content) const;

private:
  explicit SearchDir(std::string path) : m_path(std::move(path)) {}
  std::string m_path;
};

} // namespace reprun
