// diff_runs reads each step log once: the reader that compares steps.jsonl also digests it for the
// summary's integrity facts (audit/diff.cpp, StepsCheck). These cases hold that one pass to what
// verifying first and comparing after gave: differences at the edges of the reader's blocks, and
// a damaged log's message winning over any error met before its digest is known.
#include "reprun/audit/diff.hpp"
#include "reprun/core/error.hpp"
#include "reprun/record/run_dir.hpp"
#include "reprun/record/steplog.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

using namespace reprun;
using ojson = nlohmann::ordered_json;

namespace {

// Records of `size` bytes each (with the '\n'): {"step":N,"epoch":0,"loss":0.25,"batch":"xxx"}.
std::string log_of(long steps, size_t size) {
  std::string text;
  for (long s = 1; s <= steps; ++s) {
    std::string head = "{\"step\":" + std::to_string(s) + ",\"epoch\":0,\"loss\":0.25,\"batch\":\"";
    text += head + std::string(size - head.size() - 3, 'x') + "\"}\n";
  }
  return text;
}

// A run directory holding `log` as its steps.jsonl, whose summary recorded the facts of
// `recorded` (by default the log itself: an intact run).
std::string make_run(const testing::TempDir& t, const std::string& name, const std::string& log,
                     const std::string& recorded = "", const std::string& status = "complete") {
  RunDir run = RunDir::create(t / name);
  run.write_manifest(ojson{{"format", k_run_format}, {"kind", "train"}});
  testing::write(run.file(RunFile::steps), recorded.empty() ? log : recorded);
  RunSummary s;
  s.status = status;
  s.steps_log = run.log_facts(RunFile::steps);
  s.evals_log = run.log_facts(RunFile::evals);
  if (status == "running") {
    s.steps_log = run.log_facts(RunFile::steps, 3); // written at the start: the records so far
  }
  run.write_summary(s);
  testing::write(run.file(RunFile::steps), log);
  return run.path();
}

std::string error_of_diff(const std::string& a, const std::string& b) {
  return testing::error_of([&] { diff_runs(a, b, {}); });
}

} // namespace

TEST_CASE("diff: a difference at the boundary between two read blocks is found at its step") {
  testing::TempDir t;
  const size_t block = StepLogReader::k_block;
  // 1,000-byte records: the boundary falls in step 132's batch, 72 bytes in. 1,024-byte records:
  // step 128 ends exactly at the boundary and step 129 starts the next block.
  struct Case {
    size_t size, offset;
    long step;
  };
  for (const Case c : {Case{1000, block - 1, 132}, Case{1000, block, 132}, Case{1000, block + 1, 132},
                       Case{1024, block - 5, 128}, Case{1024, block + 50, 129}}) {
    CAPTURE(c.size);
    CAPTURE(c.offset);
    const std::string log = log_of(300, c.size);
    std::string other = log;
    REQUIRE(other[c.offset] == 'x'); // inside a batch fingerprint
    other[c.offset] = 'y';
    const std::string a = make_run(t, "a", log), b = make_run(t, "b", other);
    const DiffResult r = diff_runs(a, b, {});
    CHECK(r.divergence.found);
    CHECK(r.divergence.kind == DivergenceKind::data_order);
    CHECK(r.divergence.step == c.step);
    CHECK(r.divergence.line == c.step);
    CHECK(r.steps_compared == 300);
    CHECK(diff_runs(a, make_run(t, "c", log), {}).identical);
    std::filesystem::remove_all(t / "a");
    std::filesystem::remove_all(t / "b");
    std::filesystem::remove_all(t / "c");
  }
}

TEST_CASE("diff: a damaged log's message wins over a parse error met before its digest is known") {
  testing::TempDir t;
  const std::string good = log_of(400, 700); // some 280 KB: the damage lies blocks after the garbage
  std::string garbled = good;
  garbled.replace(garbled.find("{\"step\":3,"), 1, "?"); // line 3 is not JSON
  std::string edited = garbled;
  edited[edited.size() - 10] = 'y'; // and step 400's batch was edited
  const std::string a = make_run(t, "a", good);
  SUBCASE("the parse error and the damage in one log") {
    const std::string b = make_run(t, "b", edited, garbled);
    CHECK(error_of_diff(a, b).find(t / "b/steps.jsonl: damaged: its 400 step records do not match the digest") == 0);
    CHECK(error_of_diff(b, a).find(t / "b/steps.jsonl: damaged: its 400 step records do not match the digest") == 0);
  }
  SUBCASE("the parse error in A, the damage in B") {
    const std::string bad = make_run(t, "bad", garbled); // its summary covers the garbage: intact
    const std::string b = make_run(t, "b", log_of(399, 700), good); // truncated after the run
    CHECK(error_of_diff(bad, b) == t / "b/steps.jsonl" + ": damaged: holds 399 complete step records, summary.json "
                                                         "recorded 400 (truncated after the run wrote it)");
    // Without the damage, the parse error is the message.
    CHECK(error_of_diff(bad, a).find(t / "bad/steps.jsonl:3: not valid JSON") == 0);
  }
  SUBCASE("A damaged, B not a run: A's damage first, as when A was verified before B was opened") {
    const std::string b = make_run(t, "b", edited, garbled);
    std::filesystem::remove(t / "a/manifest.json");
    CHECK(error_of_diff(b, a).find(t / "b/steps.jsonl: damaged") == 0);
    CHECK(error_of_diff(a, b) == t / "a" + ": not a run directory (no manifest.json)");
  }
  SUBCASE("a running run: only its recorded records are verified, then the parse error") {
    CHECK(error_of_diff(a, make_run(t, "r", garbled, garbled, "running")).find(t / "r/steps.jsonl:3: not valid JSON") ==
          0);
    std::string early = garbled;
    early[60] = 'y'; // step 1's batch: inside the three records the summary covers
    CHECK(error_of_diff(a, make_run(t, "e", early, garbled, "running"))
              .find(t / "e/steps.jsonl: damaged: its 3 step records do not match") == 0);
  }
}

TEST_CASE("diff: long logs are read ahead and verified, with progress reported along the way") {
  testing::TempDir t;
  const std::string log = log_of(140000, 60); // 8.4 MB: read ahead by a thread each
  REQUIRE(log.size() >= StepLogReader::k_read_ahead_min);
  std::string parted = log;
  parted[parted.find("{\"step\":100000,") + 50] = 'y';
  const std::string a = make_run(t, "a", log), b = make_run(t, "b", parted);
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  DiffOptions opt;
  opt.progress = [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
  const DiffResult r = diff_runs(a, b, opt);
  CHECK(r.divergence.step == 100000);
  CHECK(r.steps_compared == 140000);
  REQUIRE(calls.size() == 2); // every 65,536 lines of A
  CHECK(calls[0].second == 2 * log.size());
  CHECK(calls[0].first == 2 * 65536 * 60);
  CHECK(calls[1].first == 2 * 131072 * 60);
  // The same logs with damage past the point of divergence: damaged, not different.
  std::string edited = parted;
  edited[edited.size() - 10] = 'z';
  testing::write(t / "b/steps.jsonl", edited);
  CHECK(error_of_diff(a, b).find(t / "b/steps.jsonl: damaged: its 140000 step records do not match") == 0);
}

namespace {

// Records of about `size` bytes whose losses are 1/step, in B plus `drift`*(step - part + 1) from
// step `part` on (0: never): a pair of logs that part there and drift apart.
std::string drifting_log(long steps, size_t size, long part, double drift) {
  std::string text;
  for (long s = 1; s <= steps; ++s) {
    const double loss = 1.0 / static_cast<double>(s) + (part > 0 && s >= part ? drift * static_cast<double>(s - part + 1) : 0.0);
    std::string head = fmt::format("{{\"step\":{},\"epoch\":0,\"loss\":{},\"batch\":\"", s, loss);
    text += head + std::string(size - std::min(size - 4, head.size()) - 3, 'x') + "\"}\n";
  }
  return text;
}

// What the walk finds after the divergence, for comparing a short pair (read here) with a long one
// (B read ahead, its lines, steps and losses found by the read-ahead thread).
struct AfterDivergence {
  long step, loss_from, peak_step;
  double peak_gap;
  std::vector<long> growth;
  size_t series;
};

AfterDivergence after_divergence(const DiffResult& r) {
  AfterDivergence out{r.divergence.step, r.divergence.loss_differs_from, r.peak ? r.peak->step : -1,
                      r.peak ? r.peak->abs_diff : -1.0, {}, r.loss_series.size()};
  for (const GapPoint& g : r.growth) {
    out.growth.push_back(g.step);
  }
  return out;
}

} // namespace

TEST_CASE("diff: a log read ahead gives what one read here gives, at every block edge") {
  testing::TempDir t;
  const size_t block = StepLogReader::k_block;
  const std::string log = log_of(1300, 1000); // 1.3 MB: B is read ahead (ring of 8 blocks: it wraps)
  REQUIRE(log.size() >= StepLogReader::k_read_ahead_min);
  const std::string a = make_run(t, "a", log);
  // Block edges after the ring wrapped (8 and 9 blocks in), the first record and the last.
  for (const size_t offset : {8 * block - 1, 8 * block, 8 * block + 1, 9 * block, size_t{500}, log.size() - 500}) {
    CAPTURE(offset);
    std::string other = log;
    REQUIRE(other[offset] == 'x');
    other[offset] = 'y';
    const std::string b = make_run(t, "b", other);
    for (const auto& [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
      const DiffResult r = diff_runs(x, y, {});
      CHECK(r.divergence.kind == DivergenceKind::data_order);
      CHECK(r.divergence.step == static_cast<long>(offset / 1000) + 1);
      CHECK(r.steps_compared == 1300);
    }
    std::filesystem::remove_all(t / "b");
  }
  CHECK(diff_runs(a, make_run(t, "same", log), {}).identical);

  // Losses that drift apart from step 600 (long) or 400 (short): the peak, the growth points and
  // the loss series come out the same whether B's losses were found ahead or parsed here. The long
  // pair is 3 MB: most of B's blocks after the divergence are read once the losses were asked for.
  for (const long steps : {700L, 3000L}) {
    CAPTURE(steps);
    const long part = steps == 700 ? 400 : 600;
    const std::string la = drifting_log(steps, 1000, 0, 0), lb = drifting_log(steps, 1000, part, 1e-7);
    REQUIRE((la.size() >= StepLogReader::k_read_ahead_min) == (steps == 3000));
    const std::string da = make_run(t, "da", la), db = make_run(t, "db", lb);
    const AfterDivergence got = after_divergence(diff_runs(da, db, {}));
    CHECK(got.step == part);
    CHECK(got.loss_from == part);
    CHECK(got.peak_step == steps);
    const double last = 1.0 / static_cast<double>(steps);
    CHECK(got.peak_gap == std::fabs(last - (last + 1e-7 * static_cast<double>(steps - part + 1))));
    std::vector<long> growth{part, part + 1, part + 10, part + 100};
    if (part + 1000 < steps) {
      growth.push_back(part + 1000);
    }
    growth.push_back(steps);
    CHECK(got.growth == growth);
    CHECK(got.series == static_cast<size_t>(steps));
    // B read here and A ahead: the same, with the gap's sign the other way.
    const AfterDivergence back = after_divergence(diff_runs(db, da, {}));
    CHECK(back.peak_step == got.peak_step);
    CHECK(back.peak_gap == got.peak_gap);
    CHECK(back.growth == got.growth);
    std::filesystem::remove_all(t / "da");
    std::filesystem::remove_all(t / "db");
  }
}

TEST_CASE("diff: a log read ahead: a running run's recorded count, damage in it, NaN under a tolerance") {
  testing::TempDir t;
  const std::string log = log_of(1300, 1000);
  const std::string a = make_run(t, "a", log);
  // A running run's summary covers its first 3 records: the digest stops there, inside the first
  // run of equal lines.
  const DiffResult r = diff_runs(a, make_run(t, "r", log, log, "running"), {});
  CHECK_FALSE(r.divergence.found);
  CHECK(r.steps_compared == 1300);
  std::string early = log;
  early[1500] = 'y'; // step 2's batch
  CHECK(error_of_diff(a, make_run(t, "e", early, log, "running"))
            .find(t / "e/steps.jsonl: damaged: its 3 step records do not match") == 0);
  CHECK(error_of_diff(make_run(t, "e2", early, log, "running"), a)
            .find(t / "e2/steps.jsonl: damaged: its 3 step records do not match") == 0);

  // In tolerance mode NaN matches nothing, not even itself: the same NaN line in both logs, deep
  // in a run of equal lines, is where they part.
  std::string with_nan = log;
  const size_t at = with_nan.find("{\"step\":1111,");
  with_nan.replace(with_nan.find("0.25", at), 4, "\"NaN\"");
  with_nan.erase(with_nan.find('"', with_nan.find("\"batch\":\"", at) + 9) - 1, 1); // the record's size kept
  const std::string na = make_run(t, "na", with_nan), nb = make_run(t, "nb", with_nan);
  CHECK(diff_runs(na, nb, {}).identical);
  DiffOptions tol;
  tol.rtol = 1e-6;
  const DiffResult rt = diff_runs(na, nb, tol);
  CHECK(rt.divergence.found);
  CHECK(rt.divergence.step == 1111);
  CHECK(rt.steps_compared == 1300);
}

namespace {

// The record of step `step` in `log` (with its '\n'), replaced by `record`.
std::string with_record(std::string log, long step, const std::string& record) {
  const size_t at = log.find(fmt::format("{{\"step\":{},", step));
  REQUIRE(at != std::string::npos);
  return log.replace(at, log.find('\n', at) + 1 - at, record + "\n");
}

} // namespace

TEST_CASE("diff: after the divergence: a step out of order, a record without a loss, a step one side skips") {
  // After the divergence the walk takes the lines whose steps and losses both readers found (B's
  // read-ahead thread, A's reader in its own loop) by count; any other line alone. Each case, for
  // a pair read here (700 steps) and one whose B is read ahead (3000 steps), either way round.
  testing::TempDir t;
  for (const long steps : {700L, 3000L}) {
    CAPTURE(steps);
    const long part = 400;
    const std::string la = drifting_log(steps, 1000, 0, 0), lb = drifting_log(steps, 1000, part, 1e-7);
    const std::string da = make_run(t, "da", la), db = make_run(t, "db", lb);
    const long late = steps - 40; // a step after the divergence, 40 lines before the end

    // A step out of order, in either log, read here or ahead: the error names its line.
    const std::string back = with_record(lb, late, fmt::format("{{\"step\":{},\"epoch\":0,\"loss\":0.5}}", late - 5));
    const std::string bad = make_run(t, "bad", back);
    const std::string want = fmt::format("steps.jsonl:{}: step {} after step {} (duplicate or decreasing step)",
                                         late, late - 5, late - 1);
    CHECK(error_of_diff(da, bad).find(t / "bad/" + want) != std::string::npos);
    CHECK(error_of_diff(bad, da).find(t / "bad/" + want) != std::string::npos);
    std::filesystem::remove_all(t / "bad");

    // A record without a loss where the gap was to be noted 100 steps after the divergence: noted
    // at the next step instead; no series point there.
    const std::string no_loss = with_record(lb, part + 100, fmt::format("{{\"step\":{},\"epoch\":0}}", part + 100));
    const std::string nl = make_run(t, "nl", no_loss);
    std::vector<long> growth{part, part + 1, part + 10, part + 101};
    if (part + 1000 < steps) {
      growth.push_back(part + 1000);
    }
    growth.push_back(steps);
    for (const auto& [x, y] : {std::pair{da, nl}, std::pair{nl, da}}) {
      const AfterDivergence got = after_divergence(diff_runs(x, y, {}));
      CHECK(got.step == part);
      CHECK(got.loss_from == part);
      CHECK(got.peak_step == steps);
      CHECK(got.growth == growth);
      CHECK(got.series == static_cast<size_t>(steps - 1));
    }
    std::filesystem::remove_all(t / "nl");

    // B skips step `late` (and ends one step later): from there no step is in both, and the gap
    // is followed up to the last step they share.
    std::string skip = lb.substr(0, lb.find(fmt::format("{{\"step\":{},", late)));
    const std::string rest = drifting_log(steps + 1, 1000, part, 1e-7);
    skip += rest.substr(rest.find(fmt::format("{{\"step\":{},", late + 1)));
    const std::string sk = make_run(t, "sk", skip);
    const DiffResult r = diff_runs(da, sk, {});
    CHECK(r.steps_compared == steps);
    CHECK(r.b.last_step == steps + 1);
    const AfterDivergence got = after_divergence(r);
    CHECK(got.peak_step == late - 1);
    CHECK(got.growth.back() == late - 1);
    const double at = 1.0 / static_cast<double>(late - 1);
    CHECK(got.peak_gap == std::fabs(at - (at + 1e-7 * static_cast<double>(late - 1 - part + 1))));
    std::filesystem::remove_all(t / "sk");
    std::filesystem::remove_all(t / "da");
    std::filesystem::remove_all(t / "db");
  }
}
