// Every report renderer against a small golden file (testdata/golden/reports/). Fixed results are
// built here (a diverging diff, an identical one of bare logs, one full of characters to escape and
// non-finite numbers, and a check), so nothing volatile (temporary paths, times) enters them.
// After an intended change of a report, regenerate the files and review the diff:
//   REPRUN_UPDATE_GOLDEN=1 build/reprun_tests -tc="report:*"
#include "reprun/audit/cause.hpp"
#include "reprun/audit/localize.hpp"
#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/report/report.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>
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
  r.a = {"runs/a", "runs/a/steps.jsonl", true, nullptr, {{"status", "complete"}, {"steps", 6}, {"train_loss", 0.5}}, 7, 6, 0, "complete"};
  r.b = {"runs/b", "runs/b/steps.jsonl", true, nullptr, {{"status", "complete"}, {"steps", 6}, {"train_loss", 0.625}}, 7, 6, 0, "complete"};
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
  d.loss_ulps = 12'345'678; // printed as "12.3 million ulp", with the relative error beside it
  d.loss_rel = 0.2;
  d.loss_differs_from = 3;
  d.tensors = {{"dense_1.weight", 1.5, 1.25, 0.2, true}};
  // The gap peaks at step 5, between the points the growth table samples.
  r.growth = {{3, 0.5, 0.625, 0.125, false}, {4, 0.5, 0.75, 0.25, false}, {6, 0.5, 0.625, 0.125, true}};
  r.peak = GapPoint{5, 0.5, 1.0, 0.5, false};
  r.steps_compared = 7;
  r.loss_series = {{1, {1.0, 1.0}}, {2, {0.75, 0.75}}, {3, {0.5, 0.625}}, {4, {0.5, 0.75}}, {5, {0.5, 1.0}},
                   {6, {0.5, 0.625}}};
  r.notes = {"a note"};
  r.diagnosis = diagnose(r);
  return r;
}

CheckResult sample_check() {
  CheckResult c;
  c.identical = false;
  // Backward runs from the last layer: dense_3's gradient is the origin, dense_1.weight (first in
  // model order, after the update) its effect.
  Divergence original = sample_diff().divergence;
  DiffResult replay;
  replay.divergence = original;
  replay.divergence.trace_phase = "backward";
  replay.divergence.trace_entry = "dense_3.weight.grad";
  const Localization l = localize(original, replay, 0, 1);
  c.verdict = "FAIL: 1 of 1 runs differ from run-1; run-2: " + l.sentence;
  c.config = "examples/quickstart.json";
  c.work_dir = "work";
  c.vary = {"threads=1,2"};
  c.runs = {{1, "work/run-1", "threads=1", 0, "complete"}, {2, "work/run-2", "threads=2", 0, "complete"}};
  CheckPair p;
  p.run = 2;
  p.diff = sample_diff();
  p.localization = l;
  c.pairs.push_back(p);
  return c;
}

// Two bare logs that match within a tolerance: no metadata, a NaN on both sides of the loss series.
DiffResult sample_identical() {
  DiffResult r;
  r.identical = true;
  r.mode = "tolerance (rtol=0.001); checksums informational";
  r.verdict = "IDENTICAL: 3 step records match within tolerance";
  r.a = {"a.jsonl", "a.jsonl", false, nullptr, nullptr, 3, 2, 0, ""};
  r.b = {"b.jsonl", "b.jsonl", false, nullptr, nullptr, 3, 2, 12, ""};
  r.steps_compared = 3;
  r.loss_series = {{1, {1.0, 1.0}}, {2, {std::nan(""), std::nan("")}}};
  r.notes = {"b.jsonl: last line is incomplete (12 bytes, a write cut short): ignored"};
  return r;
}

// A diff whose labels, fields and notes hold characters each format must escape, a data-file
// change, a run that ended early, and non-finite losses.
DiffResult sample_awkward() {
  DiffResult r;
  r.mode = "bitwise";
  r.verdict = "DIFFERENT: run ended early (B stops after 2 records, A has 3)";
  r.a = {"runs/<a>&'x'", "runs/<a>&'x'/steps.jsonl", true, nullptr, {{"status", "complete"}}, 3, 2, 0, "complete"};
  r.b = {"runs/b|c", "runs/b|c/steps.jsonl", true, nullptr, {{"status", "failed: \"nan\""}}, 2, 1, 0, "failed: \"nan\""};
  r.meta = {{"data.files", "dataset", 1, "1 files", "1 files", MetaDelta::Kind::material},
            {"env.A|B", "environment", 8, "\"x<y\"", "(absent)", MetaDelta::Kind::material},
            {"seeds.init", "seeds", 3, "1", "2", MetaDelta::Kind::varied},
            {"host.memory", "host", 9, "1", "2", MetaDelta::Kind::ignored}};
  r.dataset.changed = {{"data/d.csv", 10, 11}};
  Divergence& d = r.divergence;
  d.found = true;
  d.step = 2;
  d.line = 3;
  d.kind = DivergenceKind::ended_early;
  d.detail = "B stops after 2 records, A has 3; statuses: A complete, B failed: \"nan\"";
  d.has_loss = true;
  d.loss_a = std::numeric_limits<double>::infinity();
  d.loss_b = std::nan("");
  d.loss_ulps = std::numeric_limits<uint64_t>::max();
  r.growth = {{1, 0.5, std::nan(""), std::nan(""), true}};
  r.steps_compared = 2;
  r.loss_series = {{1, {0.5, 0.5}}, {2, {0.25, std::numeric_limits<double>::infinity()}}};
  r.notes = {"<script>alert(1)</script> | pipe"};
  r.diagnosis = diagnose(r);
  return r;
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

TEST_CASE("report: an identical diff of bare logs in every format matches its golden file") {
  const DiffResult r = sample_identical();
  check_golden("identical.txt", render_diff(r, ReportFormat::text, false));
  check_golden("identical.json", render_diff(r, ReportFormat::json, false));
  check_golden("identical.md", render_diff(r, ReportFormat::markdown, false));
  check_golden("identical.junit.xml", render_diff(r, ReportFormat::junit, false));
  check_golden("identical.html", render_diff(r, ReportFormat::html, false));
}

TEST_CASE("report: escapes, data files, non-finite numbers in every format match their golden files") {
  const DiffResult r = sample_awkward();
  check_golden("awkward.txt", render_diff(r, ReportFormat::text, false));
  check_golden("awkward.json", render_diff(r, ReportFormat::json, false));
  check_golden("awkward.md", render_diff(r, ReportFormat::markdown, false));
  check_golden("awkward.junit.xml", render_diff(r, ReportFormat::junit, false));
  check_golden("awkward.html", render_diff(r, ReportFormat::html, false));
  // What the golden files must never hold, whatever they are regenerated to.
  const std::string html = render_diff(r, ReportFormat::html, false);
  CHECK(html.find("<a>") == std::string::npos);
  CHECK(html.find("<code>runs/&lt;a&gt;&amp;&apos;x&apos;</code>") != std::string::npos);
  CHECK(html.find("<td class=\"v\">&quot;x&lt;y&quot;</td>") != std::string::npos);
  const std::string junit = render_diff(r, ReportFormat::junit, false);
  CHECK(junit.find("runs/&lt;a&gt;&amp;&apos;x&apos;") != std::string::npos);
  CHECK(junit.find("<a>") == std::string::npos);
  CHECK(junit.find("&lt;script&gt;") != std::string::npos);
  CHECK(junit.find("<script>") == std::string::npos);
  const std::string md = render_diff(r, ReportFormat::markdown, false);
  CHECK(md.find("`env.A\\|B`") != std::string::npos);
  const nlohmann::ordered_json j = diff_to_json(r);
  CHECK(j.dump().find("NaN") != std::string::npos);
  CHECK(nlohmann::ordered_json::parse(render_diff(r, ReportFormat::json, false)) == j);
}

TEST_CASE("report: a different result ends with its likely cause and fix in every format; an identical one has none") {
  const DiffResult r = sample_diff();
  REQUIRE_FALSE(r.diagnosis.empty());
  const std::string cause = r.diagnosis.front().cause; // "hyperparameters changed: optimizer.lr 0.1 -> 0.2"
  const std::string fix = r.diagnosis.front().fix;
  const std::string text = render_diff(r, ReportFormat::text, false);
  const size_t at = text.find("\nLikely cause and fix");
  REQUIRE(at != std::string::npos);
  CHECK(text.find("\nNotes") < at); // the last section
  CHECK(text.find(cause, at) != std::string::npos);
  CHECK(text.find("fix: " + fix, at) != std::string::npos);
  const std::string md = render_diff(r, ReportFormat::markdown, false);
  CHECK(md.find("**Likely cause:** " + cause + "  \n**Fix:** " + fix) != std::string::npos);
  const std::string html = render_diff(r, ReportFormat::html, false);
  CHECK(html.find("<h3>Likely cause and fix</h3>") != std::string::npos);
  CHECK(html.find("<b>Fix:</b> " + fix) != std::string::npos);
  CHECK(render_diff(r, ReportFormat::junit, false).find("fix: " + fix) != std::string::npos);
  const auto j = diff_to_json(r);
  CHECK(j["diagnosis"][0]["cause"] == cause);
  CHECK(j["diagnosis"][0]["fix"] == fix);
  const CheckResult c = sample_check();
  CHECK(render_check(c, ReportFormat::text, false).find("fix: " + fix) != std::string::npos);
  CHECK(check_to_json(c)["pairs"][0]["diff"]["diagnosis"][0]["fix"] == fix);
  const DiffResult same = sample_identical();
  CHECK(render_diff(same, ReportFormat::text, false).find("Likely cause") == std::string::npos);
  CHECK(render_diff(same, ReportFormat::html, false).find("Likely cause") == std::string::npos);
  CHECK(diff_to_json(same)["diagnosis"].empty());
}

TEST_CASE("report: a check names one origin, in computation order, and the first differing weight as its effect") {
  const CheckResult c = sample_check();
  for (auto f : {ReportFormat::text, ReportFormat::markdown, ReportFormat::html, ReportFormat::junit}) {
    const std::string o = render_check(c, f, false);
    CHECK(o.find("origin backward, layer dense_3, weight gradient (dense_3.weight.grad)") != std::string::npos);
    CHECK(o.find("step 3, backward, layer dense_3, weight gradient (dense_3.weight.grad): the first differing value "
                 "in computation order") != std::string::npos);
    CHECK(o.find("irst differing tensor in model order: dense_1.weight, an effect of the origin") != std::string::npos);
    // dense_1.weight is never presented as where the difference starts.
    CHECK(o.find("first tensor in model order") == std::string::npos);
    CHECK(o.find("layer dense_1") == std::string::npos);
  }
  const auto j = check_to_json(c);
  CHECK(j["pairs"][0]["diff"]["divergence"]["origin"]["entry"] == "dense_3.weight.grad");
  CHECK(j["pairs"][0]["diff"]["divergence"]["origin"]["effect"] == "dense_1.weight");
  CHECK(j["pairs"][0]["localization"]["effect"] == "dense_1.weight");
  // A plain diff of untraced logs says dense_1.weight may not be where the difference starts.
  CHECK(render_diff(sample_diff(), ReportFormat::text, false)
            .find("first differing tensor in model order: dense_1.weight (tensors are recorded after the update, so "
                  "the difference may start earlier in the step") != std::string::npos);
}

TEST_CASE("report: the relative error leads; ulp counts only under a million, in the loss's own format") {
  DiffResult r = sample_diff();
  const std::string text = render_diff(r, ReportFormat::text, false);
  // 12.3 million float64 ulp say nothing a relative error of 0.2 does not.
  CHECK(text.find("|diff| 0.125  relative error 0.2\n") != std::string::npos);
  CHECK(text.find("million") == std::string::npos);
  CHECK(render_diff(r, ReportFormat::markdown, false).find("`0.625`: relative error 0.2\n") != std::string::npos);
  CHECK(render_diff(r, ReportFormat::html, false).find("</code>: relative error 0.2</p>") != std::string::npos);
  // A float32 loss 2,900 of its own ulp apart.
  r.divergence.loss_ulps = 2900;
  r.divergence.loss_rel = 0.000296;
  r.divergence.loss_format = FloatFormat::float32;
  CHECK(render_diff(r, ReportFormat::text, false).find("relative error 0.000296 (2,900 float32 ulp)") != std::string::npos);
  r.divergence.loss_format = FloatFormat::float64;
  r.divergence.loss_ulps = 3;
  CHECK(render_diff(r, ReportFormat::text, false).find("relative error 0.000296 (3 ulp)") != std::string::npos);
  r = sample_diff();
  CHECK(text.find(fmt::format("  {:>10}  {:>22}  {:>22}  {:>10}  (peak)\n", 5, "0.5", "1", "0.5")) != std::string::npos);
  CHECK(text.find("peak gap: |diff| 0.5 at step 5") != std::string::npos);
  CHECK(render_diff(r, ReportFormat::markdown, false).find("| 5 (peak) | 0.5 | 1 | 0.5 |") != std::string::npos);
  CHECK(render_diff(r, ReportFormat::html, false).find("<tr class=\"peak\"><td>5 (peak)</td>") != std::string::npos);
  CHECK(diff_to_json(r)["gap_peak"]["step"] == 5);
}

TEST_CASE("report: format names, with a suggestion for a near miss") {
  CHECK(parse_report_format("text") == ReportFormat::text);
  CHECK(parse_report_format("json") == ReportFormat::json);
  CHECK(parse_report_format("markdown") == ReportFormat::markdown);
  CHECK(parse_report_format("md") == ReportFormat::markdown);
  CHECK(parse_report_format("junit") == ReportFormat::junit);
  CHECK(parse_report_format("html") == ReportFormat::html);
  std::string msg;
  try {
    parse_report_format("jsno");
  } catch (const Error& e) {
    msg = e.what();
  }
  CHECK(msg == "--format jsno: unknown report format; expected text, json, markdown, junit or html (did you mean 'json'?)");
}

TEST_CASE("report: a check that could not give a verdict shows its error in every format") {
  const std::string error = "c.json: training.epochs: must be between 1 and 1000000, got 0 <&>";
  for (auto f : {ReportFormat::text, ReportFormat::json, ReportFormat::markdown, ReportFormat::junit,
                 ReportFormat::html}) {
    const std::string out = render_check_error("check", "c.json", error, f);
    CAPTURE(out);
    const bool markup = f == ReportFormat::junit || f == ReportFormat::html;
    CHECK(out.find(markup ? "ERROR: c.json: training.epochs: must be between 1 and 1000000, got 0 &lt;&amp;&gt;"
                          : "ERROR: " + error) != std::string::npos);
  }
  const std::string junit = render_check_error("check", "c.json", error, ReportFormat::junit);
  CHECK(junit.find("<testsuites name=\"reprun\" tests=\"1\" failures=\"0\" errors=\"1\">") != std::string::npos);
  CHECK(junit.find("<error message=\"c.json: training.epochs: must be between 1 and 1000000, got 0 &lt;&amp;&gt;\"") !=
        std::string::npos);
  const auto json = nlohmann::ordered_json::parse(render_check_error("check", "c.json", error, ReportFormat::json));
  CHECK(json["identical"] == false);
  CHECK(json["error"] == error);
  CHECK(json["config"] == "c.json");
}

TEST_CASE("report: the files a program read are shown 20 of each kind, then how many more; JSON keeps all") {
  DiffResult r = sample_diff();
  r.meta.clear();
  for (int i = 0; i < 25; ++i) {
    r.meta.push_back({fmt::format("inputs.files.imgs/{:03d}.png", i), "dataset", 1, "aa", "bb", MetaDelta::Kind::material,
                      "", "1,024 -> 1,024 bytes; the first differing block is bytes 0-1,024"});
  }
  for (int i = 0; i < 22; ++i) {
    r.meta.push_back({fmt::format("inputs.files.old/{:03d}.png", i), "dataset", 1, "aa", "bb", MetaDelta::Kind::ignored,
                      "", "1,024 -> 1,024 bytes"});
  }
  r.meta.push_back({"config.optimizer.lr", "config", 2, "0.1", "0.2", MetaDelta::Kind::material});
  const std::string text = render_diff(r, ReportFormat::text, false);
  CHECK(text.find("  [dataset] imgs/019.png: 1,024 -> 1,024 bytes") != std::string::npos);
  CHECK(text.find("imgs/020.png") == std::string::npos);
  CHECK(text.find("\n  ... and 5 more files the program read differ (every one: --format json)\n") != std::string::npos);
  CHECK(text.find("[config] config.optimizer.lr: 0.1 -> 0.2") != std::string::npos); // not cut with the files
  CHECK(text.find("inputs.files.old/019.png") != std::string::npos);
  CHECK(text.find("inputs.files.old/020.png") == std::string::npos);
  CHECK(text.find("\n    ... and 2 more files the program read not counted (every one: --format json)\n") !=
        std::string::npos);
  const std::string md = render_diff(r, ReportFormat::markdown, false);
  CHECK(md.find("imgs/020.png") == std::string::npos);
  CHECK(md.find("... and 5 more files the program read differ") != std::string::npos);
  const std::string html = render_diff(r, ReportFormat::html, false);
  CHECK(html.find("imgs/020.png") == std::string::npos);
  CHECK(html.find("... and 5 more files the program read differ") != std::string::npos);
  CHECK(html.find("... and 2 more files the program read not counted") != std::string::npos);
  CHECK(diff_to_json(r)["metadata"].size() == 48);
}
