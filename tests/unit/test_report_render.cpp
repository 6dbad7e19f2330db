// Every report renderer against a small golden file (testdata/golden/reports/). A fixed
// DiffResult and CheckResult are built here, so nothing volatile (paths, times) enters them.
// After an intended change of a report, regenerate the files and review the diff:
//   REPRUN_UPDATE_GOLDEN=1 build/reprun_tests -tc="report:*"
#include "reprun/core/atomic_file.hpp"
#include "reprun/report/report.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

using namespace reprun;

namespace {

std::string golden_dir() {
  const char* td = std::getenv("REPRUN_TESTDATA");
  return std::string(td ? td : "testdata") + "/golden/reports/";
}

void check_golden(const std::string& name, const std::string& got) {
  const std::string path = golden_dir() + name;
  if (std::getenv("REPRUN_UPDATE_GOLDEN")) {
    write_file_atomic(path, got);
  }
  std::string want;
  REQUIRE_NOTHROW(want = read_file(path));
  CHECK_MESSAGE(got == want, "report differs from " << path << " (REPRUN_UPDATE_GOLDEN=1 rewrites it)");
}

DiffResult sample_diff() {
  DiffResult r;
  r.identical = false;
  r.mode = "bitwise";
  r.verdict = "DIFFERENT: runs part at step 3 (computation); 1 metadata field differs";
  r.a = {"runs/a", "runs/a/steps.jsonl", true, nullptr, {{"status", "complete"}, {"steps", 4}, {"train_loss", 0.5}}, 5, 4, 0, "complete"};
  r.b = {"runs/b", "runs/b/steps.jsonl", true, nullptr, {{"status", "complete"}, {"steps", 4}, {"train_loss", 0.75}}, 5, 4, 0, "complete"};
  MetaDelta lr{"config.optimizer.lr", "config", 2, "0.1", "0.2", MetaDelta::Kind::material};
  MetaDelta threads{"config.determinism.threads", "config", 90, "2", "8", MetaDelta::Kind::informational};
  MetaDelta created{"created", "volatile", 100, "\"t1\"", "\"t2\"", MetaDelta::Kind::volatile_field};
  r.meta = {lr, threads, created};
  Divergence& d = r.divergence;
  d.found = true;
  d.step = 3;
  d.line = 4;
  d.epoch = 0;
  d.kind = DivergenceKind::computation;
  d.detail = "same batch; dense_1.weight differs and the loss differs";
  d.first_tensor = "dense_1.weight";
  d.has_loss = true;
  d.loss_a = 0.5;
  d.loss_b = 0.625;
  d.loss_ulps = 12345;
  d.loss_rel = 0.2;
  d.loss_differs_from = 3;
  d.tensors = {{"dense_1.weight", 1.5, 1.25, 0.2, true}};
  r.growth = {{3, 0.5, 0.625, 0.125, false}, {4, 0.5, 0.75, 0.25, true}};
  r.steps_compared = 5;
  r.loss_series = {{1, {1.0, 1.0}}, {2, {0.75, 0.75}}, {3, {0.5, 0.625}}, {4, {0.5, 0.75}}};
  r.notes = {"a note"};
  return r;
}

CheckResult sample_check() {
  CheckResult c;
  c.identical = false;
  c.verdict = "FAIL: 1 of 1 runs differ from run-1; run-2: step 3, backward, layer dense_1, weight gradient: first "
              "difference; loss differs from step 3";
  c.config = "examples/quickstart.json";
  c.work_dir = "work";
  c.vary = {"threads=1,2"};
  c.runs = {{1, "work/run-1", "threads=1", 0, "complete"}, {2, "work/run-2", "threads=2", 0, "complete"}};
  CheckPair p;
  p.run = 2;
  p.diff = sample_diff();
  Localization l;
  l.found = true;
  l.step = 3;
  l.phase = "backward";
  l.layer = "dense_1";
  l.tensor = "weight gradient";
  l.entry = "dense_1.weight.grad";
  l.loss_differs_from = 3;
  l.sentence = "step 3, backward, layer dense_1, weight gradient: first difference; loss differs from step 3";
  p.localization = l;
  c.pairs.push_back(p);
  return c;
}

} // namespace

TEST_CASE("report: diff in every format matches its golden file") {
  const DiffResult r = sample_diff();
  check_golden("diff.txt", render_diff(r, ReportFormat::text, false));
  check_golden("diff.json", render_diff(r, ReportFormat::json, false));
  check_golden("diff.md", render_diff(r, ReportFormat::markdown, false));
  check_golden("diff.junit.xml", render_diff(r, ReportFormat::junit, false));
  check_golden("diff.html", render_diff(r, ReportFormat::html, false));
}

TEST_CASE("report: check in every format matches its golden file") {
  const CheckResult c = sample_check();
  check_golden("check.txt", render_check(c, ReportFormat::text, false));
  check_golden("check.json", render_check(c, ReportFormat::json, false));
  check_golden("check.md", render_check(c, ReportFormat::markdown, false));
  check_golden("check.junit.xml", render_check(c, ReportFormat::junit, false));
  check_golden("check.html", render_check(c, ReportFormat::html, false));
}

TEST_CASE("report: colour only when asked") {
  const DiffResult r = sample_diff();
  CHECK(render_diff(r, ReportFormat::text, false).find("\x1b[") == std::string::npos);
  CHECK(render_diff(r, ReportFormat::text, true).find("\x1b[") != std::string::npos);
}
