// The diff engine (audit/diff.hpp) on synthetic step logs: every divergence kind with its step,
// line, phase and tensor; tolerance; the manifest diff's classes; localization of a replay.
#include "reprun/audit/diff.hpp"
#include "reprun/audit/localize.hpp"
#include "reprun/core/error.hpp"
#include "reprun/record/step_record.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace reprun;
using ojson = nlohmann::ordered_json;

namespace {

// {"step":s,"epoch":0,"loss":L,"batch":"B","tensors":{"w":{"xxh3":W,"norm":N}}[,"forward":..., "backward":...]}
std::string line(long step, double loss, const std::string& batch = "b", const std::string& w = "w1",
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

std::string log_of(long steps) {
  std::string s = line(0, 0);
  for (long i = 1; i <= steps; ++i) {
    s += line(i, 1.0 / static_cast<double>(i));
  }
  return s;
}

DiffResult diff_texts(const std::string& a, const std::string& b, const DiffOptions& opt = {}) {
  testing::TempDir t;
  testing::write(t / "a.jsonl", a);
  testing::write(t / "b.jsonl", b);
  return diff_runs(t / "a.jsonl", t / "b.jsonl", opt);
}

std::string replace_line(const std::string& log, long step, const std::string& with) {
  std::string out;
  size_t pos = 0;
  for (long i = 0; pos < log.size(); ++i) {
    size_t nl = log.find('\n', pos);
    out += i == step ? with : log.substr(pos, nl + 1 - pos);
    pos = nl + 1;
  }
  return out;
}

} // namespace

TEST_CASE("diff: identical logs") {
  DiffResult r = diff_texts(log_of(5), log_of(5));
  CHECK(r.identical);
  CHECK_FALSE(r.divergence.found);
  CHECK(r.steps_compared == 6);
  CHECK(r.verdict == "IDENTICAL: 6 step records bitwise identical");
}

TEST_CASE("diff: data order, initial state, computation") {
  const std::string base = log_of(5);
  SUBCASE("data order: another batch") {
    DiffResult r = diff_texts(base, replace_line(base, 3, line(3, 1.0 / 3, "other")));
    CHECK(r.divergence.kind == DivergenceKind::data_order);
    CHECK(r.divergence.step == 3);
    CHECK(r.divergence.line == 4);
    CHECK(std::string(r.divergence.classification()) == "data order");
    CHECK(r.verdict == "DIFFERENT: runs part at step 3 (data order)");
  }
  SUBCASE("initial state: the step-0 weights") {
    DiffResult r = diff_texts(base, replace_line(base, 0, line(0, 0, "b", "w2")));
    CHECK(r.divergence.kind == DivergenceKind::initial_state);
    CHECK(r.divergence.step == 0);
    CHECK(r.divergence.first_tensor == "dense_1.weight");
  }
  SUBCASE("computation: same batch, another weight") {
    DiffResult r = diff_texts(base, replace_line(base, 4, line(4, 0.25, "b", "w2")));
    CHECK(r.divergence.kind == DivergenceKind::computation);
    CHECK(r.divergence.step == 4);
    CHECK(r.divergence.first_tensor == "dense_1.weight");
    CHECK(r.divergence.loss_differs_from == 0);
  }
  SUBCASE("computation: the loss, and where it starts to differ") {
    DiffResult r = diff_texts(base, replace_line(base, 2, line(2, 0.75)));
    CHECK(r.divergence.kind == DivergenceKind::computation);
    CHECK(r.divergence.has_loss);
    CHECK(r.divergence.loss_differs_from == 2);
    CHECK(r.divergence.detail == "same batch; the loss differs");
  }
}

TEST_CASE("diff: trace full names the phase and the entry") {
  std::string a = line(0, 0), b = line(0, 0);
  a += line(1, 1, "b", "w1", "g1");
  b += line(1, 1, "b", "w9", "g2");
  DiffResult r = diff_texts(a, b);
  CHECK(r.divergence.kind == DivergenceKind::computation);
  CHECK(r.divergence.trace_phase == "backward");
  CHECK(r.divergence.trace_entry == "dense_1.weight.grad");
}

TEST_CASE("diff: a run that ended early, and logs that number steps differently") {
  DiffResult r = diff_texts(log_of(5), log_of(3));
  CHECK(r.divergence.kind == DivergenceKind::ended_early);
  CHECK(r.divergence.step == 4);
  CHECK(r.divergence.line == 5);
  CHECK(r.verdict.rfind("DIFFERENT: run ended early (B stops after 4 records, A has 6", 0) == 0);
  std::string skipped = log_of(2) + line(4, 0.25) + line(5, 0.2);
  DiffResult s = diff_texts(log_of(5), skipped);
  CHECK(s.divergence.kind == DivergenceKind::steps_differ);
  CHECK(s.divergence.step == 3);
  CHECK(s.divergence.detail == "line 4 holds step 3 in A but step 4 in B");
  CHECK_FALSE(localizable(DivergenceKind::steps_differ));
  CHECK(localizable(DivergenceKind::computation));
}

TEST_CASE("diff: tolerance mode and ULP distance") {
  DiffOptions opt;
  opt.rtol = 1e-3;
  const std::string a = line(0, 0) + line(1, 1.0);
  const std::string b = line(0, 0) + line(1, 1.0000001);
  CHECK_FALSE(diff_texts(a, b).identical);
  CHECK(diff_texts(a, b, opt).identical);
  CHECK(diff_texts(a, b, opt).mode == "tolerance (rtol=0.001); checksums informational");
  CHECK(ulp_distance(1.0, std::nextafter(1.0, 2.0)) == 1);
  CHECK(ulp_distance(0.0, -0.0) == 0);
  CHECK(ulp_distance(std::nan(""), 1.0) == std::numeric_limits<uint64_t>::max());
}

TEST_CASE("diff: damaged input is an error naming the file and line") {
  try {
    diff_texts(log_of(2), line(0, 0) + "garbage\n" + line(2, 0.5));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("b.jsonl:2: not valid JSON") != std::string::npos);
  }
}

TEST_CASE("manifest diff: material, not counted (execution settings, kernels), volatile") {
  ojson a = {{"format", "reprun.run/1"},
             {"created", "t1"},
             {"config", {{"optimizer", {{"lr", 0.1}}},
                         {"training", {{"accumulation", 1}, {"steps", 10}}},
                         {"determinism", {{"threads", 2}, {"trace", "weights"}}}}},
             {"plan", {{"total_steps", 10}}},
             {"reprun", {{"kernels", {{"gemm", "avx512"}}}}}};
  ojson b = a;
  b["created"] = "t2";
  b["config"]["optimizer"]["lr"] = 0.2;
  b["config"]["training"]["accumulation"] = 4;
  b["config"]["training"]["steps"] = 20;
  b["plan"]["total_steps"] = 20;
  b["config"]["determinism"]["threads"] = 8;
  b["reprun"]["kernels"]["gemm"] = "portable";
  DatasetDelta ds;
  auto deltas = diff_manifests(a, b, {}, ds);
  auto kind_of = [&](const std::string& key) {
    for (const auto& d : deltas) {
      if (d.key == key) {
        return d.kind;
      }
    }
    FAIL("no delta for " << key);
    return MetaDelta::Kind::material;
  };
  CHECK(kind_of("config.optimizer.lr") == MetaDelta::Kind::material);
  CHECK(kind_of("config.training.accumulation") == MetaDelta::Kind::informational);
  CHECK(kind_of("config.training.steps") == MetaDelta::Kind::informational);
  CHECK(kind_of("plan.total_steps") == MetaDelta::Kind::informational);
  CHECK(kind_of("config.determinism.threads") == MetaDelta::Kind::informational);
  CHECK(kind_of("reprun.kernels.gemm") == MetaDelta::Kind::informational);
  CHECK(kind_of("created") == MetaDelta::Kind::volatile_field);
  CHECK(deltas.front().key == "config.optimizer.lr"); // material first
}

TEST_CASE("localize: a replay's trace entry becomes a phase, a layer and a tensor") {
  std::string layer, tensor;
  describe_trace_entry("dense_3.weight.grad", layer, tensor);
  CHECK(layer == "dense_3");
  CHECK(tensor == "weight gradient");
  describe_trace_entry("input", layer, tensor);
  CHECK(tensor == "batch input");
  Divergence original;
  original.found = true;
  original.step = 7;
  original.loss_differs_from = 7;
  DiffResult replay;
  replay.divergence.found = true;
  replay.divergence.step = 7;
  replay.divergence.trace_phase = "backward";
  replay.divergence.trace_entry = "dense_2.act.grad";
  Localization l = localize(original, replay, 5, 1);
  CHECK(l.found);
  CHECK(l.replay_from == 5);
  CHECK(l.sentence == "step 7, backward, layer dense_2, activation gradient: first difference; loss differs from step 7");
  CHECK(l.note.empty());
  CHECK_FALSE(localize(original, DiffResult{}, 5, 3).found);
  CHECK(localize(original, replay, 5, 2).note.find("attempt 2") != std::string::npos);
}
