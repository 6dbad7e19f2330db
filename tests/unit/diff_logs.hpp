// Step logs and run directories for the diff engine's unit tests (test_audit_diff.cpp,
// test_audit_machine_facts.cpp): a step record, a log of n steps, a log with one line replaced, a
// run directory holding a log, and a metadata delta found by key.
#pragma once

#include "reprun/audit/diff.hpp"
#include "reprun/record/run_dir.hpp"
#include "reprun/record/step_record.hpp"
#include "testing.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace difftest {

using namespace reprun;
using ojson = nlohmann::ordered_json;

// {"step":s,"epoch":0,"loss":L,"batch":"B","tensors":{"w":{"xxh3":W,"norm":N}}[,"forward":..., "backward":...]}
inline std::string line(long step, double loss, const std::string& batch = "b", const std::string& w = "w1",
                        const std::string& bwd_grad = "") {
  std::string s = "{\"step\":" + std::to_string(step) + ",\"epoch\":0";
  if (step > 0) {
    s += ",\"loss\":" + json_number(loss) + ",\"batch\":\"" + batch + "\"";
  }
  s += ",\"tensors\":{\"dense_1.weight\":{\"xxh3\":\"" + w + "\",\"norm\":1.5},\"dense_1.bias\":{\"xxh3\":\"b1\",\"norm\":0.5}}";
  if (!bwd_grad.empty()) {
    s += ",\"forward\":[{\"name\":\"input\",\"xxh3\":\"i\"},{\"name\":\"dense_1.logits\",\"xxh3\":\"l\"}]";
    s += ",\"backward\":[{\"name\":\"loss.dlogits\",\"xxh3\":\"d\"},{\"name\":\"dense_1.weight.grad\",\"xxh3\":\"" +
         bwd_grad + "\"}]";
  }
  return s + "}\n";
}

inline std::string log_of(long steps) {
  std::string s = line(0, 0);
  for (long i = 1; i <= steps; ++i) {
    s += line(i, 1.0 / static_cast<double>(i));
  }
  return s;
}

inline DiffResult diff_texts(const std::string& a, const std::string& b, const DiffOptions& opt = {}) {
  testing::TempDir t;
  testing::write(t / "a.jsonl", a);
  testing::write(t / "b.jsonl", b);
  return diff_runs(t / "a.jsonl", t / "b.jsonl", opt);
}

inline std::string replace_line(const std::string& log, long step, const std::string& with) {
  std::string out;
  size_t pos = 0;
  for (long i = 0; pos < log.size(); ++i) {
    size_t nl = log.find('\n', pos);
    out += i == step ? with : log.substr(pos, nl + 1 - pos);
    pos = nl + 1;
  }
  return out;
}



// A run directory holding `log` as its steps.jsonl, a minimal manifest and a summary.
inline std::string make_run(const testing::TempDir& t, const std::string& name, const std::string& log,
                            double lr = 0.1, int threads = 2, const std::string& status = "complete") {
  RunDir run = RunDir::create(t / name);
  run.write_manifest(ojson{{"format", k_run_format},
                           {"kind", "train"},
                           {"created", name},
                           {"config", {{"optimizer", {{"lr", lr}}}, {"determinism", {{"threads", threads}}}}}});
  testing::write(run.file(RunFile::steps), log);
  RunSummary s;
  s.status = status;
  s.steps_log = run.log_facts(RunFile::steps); // as the trainer records them
  s.evals_log = run.log_facts(RunFile::evals);
  run.write_summary(s);
  return run.path();
}

inline const MetaDelta* delta(const std::vector<MetaDelta>& v, const std::string& key) {
  for (const auto& d : v) {
    if (d.key == key) {
      return &d;
    }
  }
  return nullptr;
}


} // namespace difftest
