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

#include <filesystem>
#include <string>

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
