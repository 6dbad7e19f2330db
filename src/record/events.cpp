// The events.jsonl reader: see include/reprun/record/events.hpp.
#include "reprun/record/events.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/record/run_dir.hpp"

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <fmt/format.h>

namespace reprun {

namespace {

using ojson = nlohmann::ordered_json;

std::string text_of(const ojson& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

long number_of(const ojson& j, const char* key, long fallback) {
  return j.contains(key) && j[key].is_number_integer() ? j[key].get<long>() : fallback;
}

} // namespace

ProcessEvents read_events(const std::string& path) {
  ProcessEvents out;
  out.path = path;
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) {
    return out;
  }
  refuse_link(path);
  const std::string text = read_file(path);
  size_t pos = 0;
  long lineno = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      break; // a partial last line: the process was killed while writing it
    }
    const std::string_view line(text.data() + pos, nl - pos);
    pos = nl + 1;
    ++lineno;
    const std::string where = fmt::format("{}:{}", path, lineno);
    const ojson j = ojson::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("event") || !j["event"].is_string() ||
        !j.contains("step") || !j["step"].is_number_integer()) {
      throw Error(where, "not an event of reprun's capture (a JSON object with \"event\" and \"step\")");
    }
    const std::string event = j["event"].get<std::string>();
    if (event == "save" || event == "load") {
      CheckpointEvent e;
      e.save = event == "save";
      e.step = j["step"].get<long>();
      e.kind = text_of(j, "kind");
      if (j.contains("holds") && j["holds"].is_array()) {
        for (const auto& h : j["holds"]) {
          if (h.is_string()) {
            e.holds.push_back(h.get<std::string>());
          }
        }
      }
      e.path = text_of(j, "path");
      e.file = text_of(j, "file");
      e.sha256 = text_of(j, "sha256");
      e.bytes = number_of(j, "bytes", 0);
      e.where = text_of(j, "where");
      e.after_backward = j.value("after_backward", false);
      e.resumes_step = number_of(j, "resumes_step", -1);
      e.pid = number_of(j, "pid", 0);
      e.rank = number_of(j, "rank", -1);
      e.line = lineno;
      out.io.push_back(std::move(e));
    } else if (event == "state") {
      StateEvent s;
      s.at = text_of(j, "at");
      s.step = j["step"].get<long>();
      s.where = text_of(j, "where");
      s.states = j.contains("states") && j["states"].is_object() ? j["states"] : ojson::object();
      s.draws = j.contains("draws") && j["draws"].is_object() ? j["draws"] : ojson::object();
      s.resumed_from = number_of(j, "resumed_from", -1);
      s.rank = number_of(j, "rank", -1);
      out.states.push_back(std::move(s));
    } else if (event == "restore") {
      RestoreEvent r;
      r.step = j["step"].get<long>();
      r.generator = text_of(j, "generator");
      r.digest = text_of(j, "digest");
      r.call = text_of(j, "call");
      r.where = text_of(j, "where");
      r.rank = number_of(j, "rank", -1);
      out.restores.push_back(std::move(r));
    } else if (event == "rank" || event == "stop") {
      RankEvent r;
      r.stopped = event == "stop";
      r.rank = number_of(j, "rank", -1);
      r.pid = number_of(j, "pid", 0);
      r.step = j["step"].get<long>();
      r.world_size = number_of(j, "world_size", 0);
      out.ranks.push_back(r);
    } else {
      throw Error(where, fmt::format("unknown event \"{}\" (save, load, state, restore, rank or stop)", event));
    }
  }
  return out;
}

ProcessEvents ProcessEvents::of_rank(long rank) const {
  ProcessEvents out;
  out.path = path;
  std::copy_if(io.begin(), io.end(), std::back_inserter(out.io), [&](const CheckpointEvent& e) { return e.rank == rank; });
  std::copy_if(states.begin(), states.end(), std::back_inserter(out.states), [&](const StateEvent& e) { return e.rank == rank; });
  std::copy_if(restores.begin(), restores.end(), std::back_inserter(out.restores),
               [&](const RestoreEvent& e) { return e.rank == rank; });
  std::copy_if(ranks.begin(), ranks.end(), std::back_inserter(out.ranks), [&](const RankEvent& e) { return e.rank == rank; });
  return out;
}

} // namespace reprun
