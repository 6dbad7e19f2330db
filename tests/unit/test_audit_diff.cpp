// The diff engine (audit/diff.hpp) on synthetic step logs: every divergence kind with its step,
// line, phase and tensor; tolerance; the manifest diff's classes. Localization of a replay is in
// test_audit_localize.cpp, ULP distances in test_audit_ulp.cpp, the frameworks' and machines' facts in
// test_audit_machine_facts.cpp.
#include "reprun/audit/diff.hpp"
#include "reprun/core/error.hpp"
#include "reprun/record/run_dir.hpp"
#include "reprun/record/step_record.hpp"
#include "diff_logs.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

using namespace reprun;
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

using namespace difftest;

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
    CHECK(r.divergence.loss_differs_from == -1);
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

TEST_CASE("diff: a loss of -0.0 is not +0.0 bitwise") {
  DiffResult r = diff_texts(line(0, 0) + line(1, 0.0), line(0, 0) + line(1, -0.0));
  CHECK(r.divergence.kind == DivergenceKind::computation);
  CHECK(r.divergence.step == 1);
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


TEST_CASE("diff: run directories compare their manifests as well as their logs") {
  testing::TempDir t;
  const std::string a = make_run(t, "a", log_of(3));
  SUBCASE("identical, with volatile and not-counted fields differing") {
    DiffResult r = diff_runs(a, make_run(t, "b", log_of(3), 0.1, 8), {});
    CHECK(r.identical);
    CHECK(r.a.is_run_dir);
    CHECK(r.a.status == "complete");
    CHECK(r.a.lines == 4);
    CHECK(r.a.last_step == 3);
    CHECK(r.verdict == "IDENTICAL: 4 step records bitwise identical, metadata matches");
    REQUIRE(r.meta.size() == 2);
    CHECK(r.meta[0].key == "config.determinism.threads");
    CHECK(r.meta[0].kind == MetaDelta::Kind::informational);
    CHECK(r.meta[1].key == "created");
    CHECK(r.meta[1].kind == MetaDelta::Kind::volatile_field);
    CHECK(r.material_meta_count() == 0);
  }
  SUBCASE("the same steps under another config") {
    DiffResult r = diff_runs(a, make_run(t, "b", log_of(3), 0.2), {});
    CHECK_FALSE(r.identical);
    CHECK_FALSE(r.divergence.found);
    CHECK(r.verdict == "DIFFERENT: step records identical, but 1 metadata field differs");
    CHECK(r.meta[0].key == "config.optimizer.lr");
    CHECK(r.meta[0].a == "0.1");
    CHECK(r.meta[0].b == "0.2");
    CHECK(r.meta[0].category == "config");
    CHECK(r.meta[0].rank == 2);
    // Ignored on request: then the runs are the same.
    DiffOptions opt;
    opt.ignore_meta = {"config.optimizer"};
    DiffResult ignored = diff_runs(a, t / "b", opt);
    CHECK(ignored.identical);
    CHECK(delta(ignored.meta, "config.optimizer.lr")->kind == MetaDelta::Kind::ignored);
  }
  SUBCASE("diverging steps and metadata in one verdict") {
    const std::string b = make_run(t, "b", replace_line(log_of(3), 2, line(2, 0.75)), 0.2);
    CHECK(diff_runs(a, b, {}).verdict == "DIFFERENT: runs part at step 2 (computation); 1 metadata field differs");
  }
  SUBCASE("a run that stopped, with its status") {
    DiffResult r = diff_runs(a, make_run(t, "b", log_of(1), 0.1, 2, "interrupted"), {});
    CHECK(r.divergence.kind == DivergenceKind::ended_early);
    CHECK(r.divergence.detail == "B stops after 2 records, A has 4; statuses: A complete, B interrupted");
    CHECK(r.verdict == "DIFFERENT: run ended early (B stops after 2 records, A has 4)");
  }
  SUBCASE("equal logs, different statuses: a note") {
    DiffResult r = diff_runs(a, make_run(t, "b", log_of(3), 0.1, 2, "interrupted"), {});
    CHECK(r.identical);
    CHECK(r.notes == std::vector<std::string>{"statuses differ: A complete, B interrupted"});
  }
  SUBCASE("a damaged log is an error, not a divergence") {
    const std::string b = make_run(t, "b", log_of(3));
    testing::write(RunDir::open(b).file(RunFile::steps), log_of(2));
    CHECK(testing::error_of([&] { diff_runs(a, b, {}); }) ==
          b + "/steps.jsonl" +
              ": damaged: holds 3 complete step records, summary.json recorded 4 (truncated after the run wrote it)");
  }
  SUBCASE("a summary without integrity facts: compared as it is, with a note") {
    const std::string b = make_run(t, "b", log_of(3));
    RunSummary old;
    old.status = "complete";
    RunDir::open(b).write_summary(old);
    DiffResult r = diff_runs(a, b, {});
    CHECK(r.identical);
    REQUIRE(r.notes.size() == 1);
    CHECK(r.notes[0].find("holds no integrity facts") != std::string::npos);
  }
  SUBCASE("a run directory against a bare log") {
    DiffResult r = diff_runs(a, a + "/steps.jsonl", {});
    CHECK(r.identical);
    CHECK(r.verdict == "IDENTICAL: 4 step records bitwise identical");
    CHECK(r.notes == std::vector<std::string>{"one side is a run directory, the other a bare step log: metadata not compared"});
    CHECK(r.b.status.empty());
  }
  SUBCASE("a folder that is no run, a path that is nothing") {
    fs::create_directories(t / "empty");
    CHECK(testing::error_of([&] { diff_runs(a, t / "empty", {}); }) == t / "empty" + ": not a run directory (no manifest.json)");
    CHECK(testing::error_of([&] { diff_runs(t / "nope", a, {}); }) ==
          t / "nope" + ": no such file or directory (expected a run directory or a steps.jsonl file)");
    RunDir nolog = RunDir::create(t / "nolog");
    nolog.write_manifest(ojson{{"format", k_run_format}});
    CHECK(testing::error_of([&] { diff_runs(a, t / "nolog", {}); }) == t / "nolog" + ": run directory has no steps.jsonl");
  }
}

TEST_CASE("diff: the first differing tensor is named in model order, with its norms") {
  // Model order here is weight, then bias (not the alphabetical order).
  const std::string base = log_of(3);
  std::string both = line(2, 0.5, "b", "w2");
  const auto bias_at = both.find("\"b1\"");
  both.replace(bias_at, 4, "\"b2\"");
  DiffResult r = diff_texts(base, replace_line(base, 2, both));
  CHECK(r.divergence.kind == DivergenceKind::computation);
  CHECK(r.divergence.first_tensor == "dense_1.weight");
  REQUIRE(r.divergence.tensors.size() == 2);
  CHECK(r.divergence.tensors[1].name == "dense_1.bias");
  CHECK(r.divergence.tensors[0].has_norm);
  CHECK(r.divergence.tensors[0].rel == 0.0); // the norms agree, the checksums do not
  CHECK(r.divergence.detail == "same batch; dense_1.weight differs");
  // Only the bias: the bias is named.
  std::string bias_only = line(2, 0.5);
  bias_only.replace(bias_only.find("\"b1\""), 4, "\"b2\"");
  CHECK(diff_texts(base, replace_line(base, 2, bias_only)).divergence.first_tensor == "dense_1.bias");
  // A norm that differs, and a tensor missing from B.
  std::string norm = line(2, 0.5);
  norm.replace(norm.find("1.5"), 3, "3.0");
  DiffResult n = diff_texts(base, replace_line(base, 2, norm));
  REQUIRE(n.divergence.tensors.size() == 1);
  CHECK(n.divergence.tensors[0].norm_a == 1.5);
  CHECK(n.divergence.tensors[0].norm_b == 3.0);
  CHECK(n.divergence.tensors[0].rel == 0.5);
  const std::string no_weight = "{\"step\":2,\"epoch\":0,\"loss\":0.5,\"batch\":\"b\",\"tensors\":{\"dense_1.bias\":{\"xxh3\":\"b1\",\"norm\":0.5}}}\n";
  const DiffResult m = diff_texts(base, replace_line(base, 2, no_weight));
  CHECK(m.divergence.first_tensor == "dense_1.weight (missing in B)");
  // A tensor one model has and the other not (a bias removed) is said first: the models differ.
  CHECK(m.divergence.detail == "the models differ (recorded in A only: dense_1.weight); same batch");
  CHECK(diff_texts(replace_line(base, 2, no_weight), base).divergence.detail.rfind(
            "the models differ (recorded in B only: dense_1.weight); ", 0) == 0);
}

TEST_CASE("diff: trace full in each phase, with step and line") {
  const std::string head = line(0, 0) + line(1, 1, "b", "w1", "g1");
  SUBCASE("forward") {
    std::string b = line(2, 0.5, "b", "w1", "g1");
    b.replace(b.find("\"l\""), 3, "\"L\"");
    DiffResult r = diff_texts(head + line(2, 0.5, "b", "w1", "g1"), head + b);
    CHECK(r.divergence.step == 2);
    CHECK(r.divergence.line == 3);
    CHECK(r.divergence.trace_phase == "forward");
    CHECK(r.divergence.trace_entry == "dense_1.logits");
    CHECK(r.divergence.detail == "same batch; first difference in forward at dense_1.logits");
  }
  SUBCASE("backward") {
    DiffResult r = diff_texts(head + line(2, 0.5, "b", "w1", "g1"), head + line(2, 0.5, "b", "w1", "g2"));
    CHECK(r.divergence.trace_phase == "backward");
    CHECK(r.divergence.trace_entry == "dense_1.weight.grad");
  }
  SUBCASE("update: the traces agree, the weights after the update do not") {
    DiffResult r = diff_texts(head + line(2, 0.5, "b", "w1", "g1"), head + line(2, 0.5, "b", "w2", "g1"));
    CHECK(r.divergence.kind == DivergenceKind::computation);
    CHECK(r.divergence.trace_phase == "update");
    CHECK(r.divergence.trace_entry == "dense_1.weight");
  }
  SUBCASE("trace entries are not compared in tolerance mode") {
    DiffOptions opt;
    opt.atol = 1e-9;
    DiffResult r = diff_texts(head + line(2, 0.5, "b", "w1", "g1"), head + line(2, 0.5, "b", "w1", "g2"), opt);
    CHECK(r.identical);
  }
}

TEST_CASE("diff: data order from the epoch, initial state from step 0, and the note without a step-0 record") {
  const std::string base = log_of(3);
  std::string other_epoch = line(2, 0.5);
  other_epoch.replace(other_epoch.find("\"epoch\":0"), 9, "\"epoch\":1");
  DiffResult e = diff_texts(base, replace_line(base, 2, other_epoch));
  CHECK(e.divergence.kind == DivergenceKind::data_order);
  CHECK(e.divergence.step == 2);
  DiffResult d = diff_texts(base, replace_line(base, 1, line(1, 1.0, "c")));
  CHECK(d.divergence.detail == "the batch fingerprint differs (b vs c)");
  CHECK(d.divergence.line == 2);
  // The built-in step-0 record (no loss, no batch) differs: whatever differs, it is the initial state.
  DiffResult i = diff_texts(base, replace_line(base, 0, line(0, 0, "b", "w9")));
  CHECK(i.divergence.detail == "the weights differ before any update");
  CHECK(i.divergence.line == 1);
  CHECK(i.verdict == "DIFFERENT: runs part at step 0 (initial state)");
  // Logs that start at step 1 cannot tell initial weights from computation.
  DiffResult n = diff_texts(line(1, 1.0), line(1, 1.0, "b", "w2"));
  CHECK(n.divergence.kind == DivergenceKind::computation);
  CHECK(n.notes == std::vector<std::string>{
                       "the logs have no step-0 record, so initial weights cannot be told apart from computation"});
}

namespace {

// A program's step log under `reprun exec` may number its steps from 0: {"step":0,"loss":L,"batch":"B","tensors":...}.
std::string exec_line(long step, double loss, const std::string& batch = "b", const std::string& w = "w1") {
  return "{\"step\":" + std::to_string(step) + ",\"loss\":" + json_number(loss) + ",\"batch\":\"" + batch +
         "\",\"tensors\":{\"0.weight\":\"" + w + "\",\"0.bias\":\"b1\"}}\n";
}

} // namespace

TEST_CASE("diff: a step-0 record with a loss or a batch is a training step, compared batch first") {
  const std::string base = exec_line(0, 2.0) + exec_line(1, 1.0) + exec_line(2, 0.5);
  SUBCASE("another batch at step 0 is data order") {
    DiffResult r = diff_texts(base, replace_line(base, 0, exec_line(0, 2.5, "c", "w2")));
    CHECK(r.divergence.kind == DivergenceKind::data_order);
    CHECK(r.divergence.step == 0);
    CHECK(r.divergence.line == 1);
    CHECK(r.divergence.detail == "the batch fingerprint differs (b vs c)");
    CHECK(r.verdict == "DIFFERENT: runs part at step 0 (data order)");
  }
  SUBCASE("the same batch with another loss at step 0 is computation, and the loss differs from step 0") {
    const std::string other = exec_line(0, 2.5) + exec_line(1, 1.5) + exec_line(2, 0.5);
    DiffResult r = diff_texts(base, other);
    CHECK(r.divergence.kind == DivergenceKind::computation);
    CHECK(r.divergence.step == 0);
    CHECK(r.divergence.detail == "same batch; the loss differs");
    CHECK(r.divergence.loss_differs_from == 0);
    CHECK(r.verdict == "DIFFERENT: runs part at step 0 (computation)");
    CHECK(r.notes == std::vector<std::string>{"the logs' step 0 is a training step (it has a loss or a batch), so "
                                              "initial weights cannot be told apart from computation"});
    // Step 0's loss is plotted like any other.
    REQUIRE_FALSE(r.loss_series.empty());
    CHECK(r.loss_series.front().first == 0);
  }
  SUBCASE("a loss without a batch (--loss-regex) makes step 0 a training step too") {
    DiffResult r = diff_texts("{\"step\":0,\"loss\":2}\n", "{\"step\":0,\"loss\":3}\n");
    CHECK(r.divergence.kind == DivergenceKind::computation);
    CHECK(r.divergence.step == 0);
  }
  SUBCASE("the built-in trainer's step 0 (no loss, no batch) is still the initial state") {
    const std::string builtin = log_of(3);
    DiffResult r = diff_texts(builtin, replace_line(builtin, 0, line(0, 0, "b", "w2")));
    CHECK(r.divergence.kind == DivergenceKind::initial_state);
    CHECK(r.divergence.step == 0);
    CHECK(r.divergence.detail == "the weights differ before any update");
    CHECK(r.verdict == "DIFFERENT: runs part at step 0 (initial state)");
    CHECK(r.notes.empty());
  }
  SUBCASE("an initial state against a training step 0 is a difference in how the logs number steps") {
    DiffResult r = diff_texts(log_of(2), base);
    CHECK(r.divergence.kind == DivergenceKind::steps_differ);
    CHECK(r.divergence.step == 0);
    CHECK(r.divergence.detail == "step 0 is the initial state in A (no loss, no batch) but a training step in B");
  }
  SUBCASE("a training step 0 on one side only is compared, not dropped as initial weights") {
    const std::string from_one = exec_line(1, 2.0) + exec_line(2, 1.0) + exec_line(3, 0.5);
    DiffResult r = diff_texts(base, from_one);
    CHECK(r.divergence.kind == DivergenceKind::steps_differ);
    CHECK(r.divergence.step == 0);
    CHECK(r.divergence.detail == "line 1 holds step 0 in A but step 1 in B");
    DiffResult s = diff_texts(from_one, base);
    CHECK(s.divergence.detail == "line 1 holds step 1 in A but step 0 in B");
    // The built-in trainer's initial-state record on one side only is still left out.
    std::string builtin = log_of(2);
    DiffResult t = diff_texts(builtin, builtin.substr(builtin.find('\n') + 1));
    CHECK(t.identical);
    CHECK(t.notes == std::vector<std::string>{"not compared: the step-0 record (initial weights) is in A only (its "
                                              "trace level records it, the other's does not)"});
  }
}

TEST_CASE("diff: how the gap grows after the divergence") {
  std::string a = line(0, 0), b = line(0, 0);
  for (long s = 1; s <= 25; ++s) {
    a += line(s, 1.0);
    b += line(s, s < 3 ? 1.0 : 1.0 + 0.01 * static_cast<double>(s), "b", s < 3 ? "w1" : "w2");
  }
  DiffResult r = diff_texts(a, b);
  CHECK(r.divergence.step == 3);
  CHECK(r.divergence.loss_differs_from == 3);
  // The divergence, then 1 and 10 steps after it, then the last common step.
  REQUIRE(r.growth.size() == 4);
  CHECK(r.growth[0].step == 3);
  CHECK(r.growth[1].step == 4);
  CHECK(r.growth[2].step == 13);
  CHECK(r.growth[3].step == 25);
  CHECK(r.growth[3].is_end);
  CHECK_FALSE(r.growth[2].is_end);
  CHECK(r.growth[3].abs_diff == doctest::Approx(0.25));
  CHECK(r.loss_series.size() == 25);
  CHECK(r.loss_series.front().first == 1);
  // A divergence with the same loss: where the loss starts to differ is found later.
  std::string c = line(0, 0), d = line(0, 0);
  for (long s = 1; s <= 6; ++s) {
    c += line(s, 1.0);
    d += line(s, s < 5 ? 1.0 : 2.0, "b", s < 2 ? "w1" : "w2");
  }
  DiffResult g = diff_texts(c, d);
  CHECK(g.divergence.step == 2);
  CHECK(g.divergence.loss_differs_from == 5);
}

TEST_CASE("diff: tolerance with atol, rtol and ULPs; NaN never within tolerance") {
  const std::string a = line(0, 0) + line(1, 1.0);
  const std::string b = line(0, 0) + line(1, 1.001);
  DiffOptions atol;
  atol.atol = 0.01;
  CHECK(diff_texts(a, b, atol).identical);
  CHECK(diff_texts(a, b, atol).mode == "tolerance (atol=0.01); checksums informational");
  CHECK(diff_texts(a, b, atol).verdict == "IDENTICAL: 2 step records match within tolerance");
  atol.atol = 1e-4;
  CHECK_FALSE(diff_texts(a, b, atol).identical);
  DiffOptions rtol;
  rtol.rtol = 1e-4;
  CHECK_FALSE(diff_texts(a, b, rtol).identical);
  DiffOptions ulps;
  ulps.max_ulps = 4;
  const std::string c = line(0, 0) + line(1, std::nextafter(std::nextafter(1.0, 2.0), 2.0));
  CHECK(diff_texts(a, c, ulps).identical);
  ulps.max_ulps = 1;
  DiffResult u = diff_texts(a, c, ulps);
  CHECK_FALSE(u.identical);
  CHECK(u.divergence.loss_ulps == 2);
  CHECK(u.divergence.loss_differs_from == 1);
  DiffOptions all;
  all.rtol = 0.5;
  all.atol = 0.25;
  all.max_ulps = 3;
  CHECK(diff_texts(a, a, all).mode == "tolerance (rtol=0.5 atol=0.25 max-ulps=3); checksums informational");
  // Checksums are informational in tolerance mode when both sides have norms.
  const std::string w = line(0, 0) + line(1, 1.0, "b", "w2");
  CHECK(diff_texts(a, w, atol).identical);
  CHECK_FALSE(diff_texts(a, w).identical);
  // NaN equals itself bit for bit, but never within a tolerance, not even on identical lines.
  const std::string nan = line(0, 0) + line(1, std::nan(""));
  CHECK(diff_texts(nan, nan).identical);
  DiffResult t = diff_texts(nan, nan, rtol);
  CHECK_FALSE(t.identical);
  CHECK(t.divergence.kind == DivergenceKind::computation);
  CHECK(t.divergence.step == 1);
  // +0 and -0: equal values within any tolerance.
  const std::string pz = line(0, 0) + line(1, 0.0), nz = line(0, 0) + line(1, -0.0);
  CHECK(diff_texts(pz, nz, rtol).identical);
}

TEST_CASE("manifest diff: the config file's digest is counted only where no config key explains it") {
  ojson a = {{"config_file", {{"path", "a.json"}, {"sha256", "aaaa"}}},
             {"config", {{"optimizer", {{"lr", 0.1}}}, {"determinism", {{"trace", "weights"}}}}},
             {"config_digest", "d1"}};
  auto deltas_of = [](const ojson& x, const ojson& y) {
    DatasetDelta ds;
    return diff_manifests(x, y, {}, ds);
  };
  // Other bytes (whitespace, a description), same resolved config: shown, not counted.
  ojson b = a;
  b["config_file"]["sha256"] = "bbbb";
  auto bytes = deltas_of(a, b);
  REQUIRE(bytes.size() == 1);
  CHECK(bytes[0].key == "config_file.sha256");
  CHECK(bytes[0].kind == MetaDelta::Kind::informational);
  CHECK(bytes[0].why.find("the file's bytes only") != std::string::npos);
  // An execution setting: the digest leaves it out, so it is equal.
  b["config"]["determinism"]["trace"] = "loss";
  auto trace = deltas_of(a, b);
  CHECK(std::none_of(trace.begin(), trace.end(), [](const MetaDelta& d) { return d.kind == MetaDelta::Kind::material; }));
  // A real change: the key is the cause, the digests follow it.
  b["config"]["optimizer"]["lr"] = 0.2;
  b["config_digest"] = "d2";
  auto lr = deltas_of(a, b);
  long counted = 0;
  for (const auto& d : lr) {
    counted += d.kind == MetaDelta::Kind::material ? 1 : 0;
  }
  CHECK(counted == 1);
  CHECK(delta(lr, "config.optimizer.lr")->kind == MetaDelta::Kind::material);
  CHECK(delta(lr, "config_digest")->kind == MetaDelta::Kind::informational);
  CHECK(delta(lr, "config_file.sha256")->why == "a digest of the config keys listed");
  // A digest no key explains stays counted; so does a file digest without config digests.
  ojson c = a;
  c["config_digest"] = "d3";
  CHECK(delta(deltas_of(a, c), "config_digest")->kind == MetaDelta::Kind::material);
  ojson bare_a = a, bare_b = b;
  bare_a.erase("config_digest");
  bare_b.erase("config_digest");
  bare_b["config"]["optimizer"]["lr"] = 0.1;
  CHECK(delta(deltas_of(bare_a, bare_b), "config_file.sha256")->kind == MetaDelta::Kind::material);
}

TEST_CASE("diff: duplicate steps, garbage after the shorter log ends, and a cut-short last line") {
  CHECK(testing::error_of([] { diff_texts(log_of(1) + line(1, 1.0), log_of(1) + line(1, 1.0)); }).find(
            "a.jsonl:3: step 1 after step 1 (duplicate or decreasing step)") != std::string::npos);
  CHECK(testing::error_of([] { diff_texts(log_of(2), log_of(1) + line(0, 0)); }).find(
            "b.jsonl:3: step 0 after step 1 (duplicate or decreasing step)") != std::string::npos);
  CHECK(testing::error_of([] { diff_texts(log_of(2) + "garbage\n", log_of(2)); }).find(
            "a.jsonl:4: not valid JSON (at byte 1): garbage") != std::string::npos);
  testing::TempDir t;
  testing::write(t / "a.jsonl", log_of(2));
  testing::write(t / "b.jsonl", log_of(2) + "{\"st");
  DiffResult r = diff_runs(t / "a.jsonl", t / "b.jsonl", {});
  CHECK(r.identical);
  CHECK(r.b.partial_tail == 4);
  CHECK(r.notes == std::vector<std::string>{t / "b.jsonl" + ": last line is incomplete (4 bytes, a write cut short): ignored"});
  // Two empty logs are identical; an empty log against a full one ended early at step 0.
  CHECK(diff_texts("", "").verdict == "IDENTICAL: 0 step records bitwise identical");
  DiffResult e = diff_texts("", log_of(1));
  CHECK(e.divergence.kind == DivergenceKind::ended_early);
  CHECK(e.divergence.step == 0);
  CHECK(e.divergence.line == 1);
  CHECK(e.divergence.detail == "A stops after 0 records, B has 2; statuses: A (bare log), B (bare log)");
}

TEST_CASE("manifest diff: absent keys, data files, varied and ignored keys, and the order of classes") {
  ojson a = {{"format", "reprun.run/1"},
             {"host", {{"hostname", "h1"}, {"cpu_model", "x"}, {"memory", 1}}},
             {"seeds", {{"init", 1}}},
             {"env", {{"OMP_NUM_THREADS", "1"}}},
             {"data", {{"files", {{{"path", "d.csv"}, {"size", 10u}, {"sha256", "aa"}},
                                  {{"path", "gone.csv"}, {"size", 5u}, {"sha256", "bb"}}}}}}};
  ojson b = a;
  b["host"]["hostname"] = "h2";
  b["host"]["cpu_model"] = "y";
  b["host"]["memory"] = 2;
  b["seeds"]["init"] = 2;
  b["env"].erase("OMP_NUM_THREADS");
  b["gpu"] = {{"name", "H100"}};
  b["data"]["files"] = {{{"path", "d.csv"}, {"size", 11u}, {"sha256", "cc"}}, {{"path", "new.csv"}, {"size", 3u}}};
  DatasetDelta ds;
  auto deltas = diff_manifests(a, b, {}, ds);
  REQUIRE(ds.changed.size() == 1);
  CHECK(ds.changed[0].path == "d.csv");
  CHECK(ds.changed[0].size_a == 10);
  CHECK(ds.changed[0].size_b == 11);
  REQUIRE(ds.added.size() == 1);
  CHECK(ds.added[0].path == "new.csv");
  REQUIRE(ds.removed.size() == 1);
  CHECK(ds.removed[0].path == "gone.csv");
  // Material by rank (dataset, seeds, gpu, cpu, environment, host), then volatile.
  std::vector<std::string> keys;
  for (const auto& d : deltas) {
    keys.push_back(d.key);
  }
  CHECK(keys == std::vector<std::string>{"data.files", "seeds.init", "gpu.name", "host.cpu_model",
                                         "env.OMP_NUM_THREADS", "host.memory", "host.hostname"});
  CHECK(delta(deltas, "data.files")->a == "2 files");
  CHECK(delta(deltas, "data.files")->category == "dataset");
  CHECK(delta(deltas, "gpu.name")->a == "(absent)");
  CHECK(delta(deltas, "gpu.name")->b == "\"H100\"");
  CHECK(delta(deltas, "env.OMP_NUM_THREADS")->b == "(absent)");
  CHECK(delta(deltas, "env.OMP_NUM_THREADS")->category == "environment");
  CHECK(delta(deltas, "host.cpu_model")->category == "cpu");
  CHECK(delta(deltas, "host.memory")->rank == 9);
  CHECK(delta(deltas, "host.hostname")->kind == MetaDelta::Kind::volatile_field);
  // check --vary marks what it changed; --ignore-meta what the user chose to ignore; a prefix
  // matches whole components only ("seed" is not "seeds"), so "seed" matches no key and is
  // refused, with the key it may have meant.
  DiffOptions opt;
  opt.varied = {"seeds"};
  opt.ignore_meta = {"host", "gpu.name", "seed"};
  DatasetDelta ds_seed;
  CHECK_THROWS_WITH(diff_manifests(a, b, opt, ds_seed),
                    "--ignore-meta seed: matches no metadata key of either run, so it would ignore nothing (did you "
                    "mean 'seeds'?)");
  opt.ignore_meta = {"host", "gpu.name"};
  DatasetDelta ds2;
  auto marked = diff_manifests(a, b, opt, ds2);
  CHECK(delta(marked, "seeds.init")->kind == MetaDelta::Kind::varied);
  CHECK(delta(marked, "host.cpu_model")->kind == MetaDelta::Kind::ignored);
  CHECK(delta(marked, "gpu.name")->kind == MetaDelta::Kind::ignored);
  CHECK(delta(marked, "host.hostname")->kind == MetaDelta::Kind::volatile_field); // volatile stays volatile
  keys.clear();
  for (const auto& d : marked) {
    keys.push_back(d.key);
  }
  CHECK(keys == std::vector<std::string>{"data.files", "env.OMP_NUM_THREADS", "seeds.init", "gpu.name",
                                         "host.cpu_model", "host.memory", "host.hostname"});
  // Equal manifests: nothing.
  DatasetDelta ds3;
  CHECK(diff_manifests(a, a, {}, ds3).empty());
  CHECK_FALSE(ds3.any());
}

namespace {

// A data-parallel exec's run directory: rank r's log is logs[r] (rank 0's the run's steps.jsonl).
std::string make_ranked_run(const testing::TempDir& t, const std::string& name, const std::vector<std::string>& logs) {
  RunDir run = RunDir::create(t / name);
  ojson listed = ojson::object();
  listed["0"] = "steps.jsonl";
  testing::write(run.file(RunFile::steps), logs[0]);
  RunSummary s;
  s.status = "complete";
  s.steps_log = run.log_facts(RunFile::steps);
  for (size_t r = 1; r < logs.size(); ++r) {
    const RunDir rank = run.rank(static_cast<int>(r));
    testing::write(rank.file(RunFile::steps), logs[r]);
    listed[std::to_string(r)] = "ranks/" + std::to_string(r) + "/steps.jsonl";
    s.rank_logs[static_cast<int>(r)] = rank.log_facts(RunFile::steps);
  }
  run.write_manifest(ojson{{"format", k_run_format},
                           {"kind", "exec"},
                           {"created", name},
                           {"ranks", {{"world_size", logs.size()}, {"logs", listed}}}});
  run.write_summary(s);
  return run.path();
}

// Rank r's log: its own losses (r shifts them), the same parameters on every rank.
std::string rank_log(int r, long steps, long differs_from = -1, bool loss_too = true) {
  std::string s;
  for (long i = 1; i <= steps; ++i) {
    const bool d = differs_from > 0 && i >= differs_from;
    s += line(i, 1.0 / static_cast<double>(i + r) + (d && loss_too ? 1e-3 : 0.0), "b", d ? "w2" : "w1");
  }
  return s;
}

} // namespace

TEST_CASE("diff of data-parallel runs: each rank against the same rank, the root named by its loss") {
  testing::TempDir t;
  const std::string a = make_ranked_run(t, "a", {rank_log(0, 4), rank_log(1, 4), rank_log(2, 4)});
  SUBCASE("identical on every rank") {
    const DiffResult r = diff_runs(a, make_ranked_run(t, "b", {rank_log(0, 4), rank_log(1, 4), rank_log(2, 4)}), {});
    CHECK(r.identical);
    CHECK(r.ranks.size() == 3);
    CHECK(r.steps_compared == 12);
    CHECK(r.verdict == "IDENTICAL: 12 step records bitwise identical on 3 ranks, metadata matches");
  }
  SUBCASE("every rank's parameters differ from step 3, only rank 2's loss: rank 2 is the root") {
    const DiffResult r = diff_runs(
        a, make_ranked_run(t, "b", {rank_log(0, 4, 3, false), rank_log(1, 4, 3, false), rank_log(2, 4, 3)}), {});
    CHECK_FALSE(r.identical);
    CHECK(r.divergence.step == 3);
    CHECK(r.divergence.rank == 2);
    CHECK(r.verdict == "DIFFERENT: runs part at step 3 on rank 2 (computation)");
    REQUIRE(r.ranks.size() == 3);
    CHECK_FALSE(r.ranks[0].loss_differs);
    CHECK(r.ranks[2].loss_differs);
  }
  SUBCASE("no loss differs: the lowest rank whose log differs") {
    const DiffResult r =
        diff_runs(a, make_ranked_run(t, "b", {rank_log(0, 4), rank_log(1, 4, 2, false), rank_log(2, 4, 2, false)}), {});
    CHECK(r.divergence.step == 2);
    CHECK(r.divergence.rank == 1);
  }
  SUBCASE("another world size is one counted difference, and the logs are not compared") {
    const DiffResult r = diff_runs(a, make_ranked_run(t, "b", {rank_log(0, 4), rank_log(1, 4)}), {});
    CHECK_FALSE(r.identical);
    const MetaDelta* ws = delta(r.meta, "ranks.world_size");
    REQUIRE(ws != nullptr);
    CHECK(ws->category == "distributed");
    CHECK(r.material_meta_count() == 1); // the world size; the logs follow it
    CHECK(r.verdict == "DIFFERENT: world sizes differ (3 -> 2), step logs not compared; 1 metadata field differs");
  }
  SUBCASE("a damaged rank log is an error naming it") {
    const std::string b = make_ranked_run(t, "b", {rank_log(0, 4), rank_log(1, 4), rank_log(2, 4)});
    testing::write(b + "/ranks/2/steps.jsonl", rank_log(2, 4, 4));
    CHECK_THROWS_WITH_AS(diff_runs(a, b, {}), doctest::Contains("ranks/2/steps.jsonl: damaged"), Error);
  }
}

TEST_CASE("diff: the rank an op trace localized becomes the root only when no loss names one") {
  DiffResult r;
  r.divergence.found = true;
  r.divergence.step = 1;
  r.divergence.kind = DivergenceKind::computation;
  r.divergence.rank = 0;
  r.ranks = {{0, true, 1, DivergenceKind::computation, false, 4}, {1, true, 1, DivergenceKind::computation, false, 4}};
  CHECK(set_root_rank(r, 1));
  CHECK(r.divergence.rank == 1);
  CHECK(r.verdict == "DIFFERENT: runs part at step 1 on rank 1 (computation)");
  CHECK_FALSE(set_root_rank(r, 2)); // no such rank parts there
  r.divergence.rank = 0;
  r.ranks[0].loss_differs = true; // rank 0's loss differs: the loss names the root
  CHECK_FALSE(set_root_rank(r, 1));
  CHECK(r.divergence.rank == 0);
}
