// RunDir (record/run_dir.hpp): the run directory's one owner.
#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/record/run_dir.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <functional>

using namespace reprun;
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

using testing::error_of;

ojson minimal_manifest() { return ojson{{"format", k_run_format}, {"kind", "train"}}; }

} // namespace

TEST_CASE("RunDir: create, open, holds_run, and no second run in one directory") {
  testing::TempDir t;
  const std::string dir = t / "run";
  CHECK_FALSE(RunDir::holds_run(dir));
  CHECK(error_of([&] { RunDir::open(dir); }) == dir + ": not a run directory (no manifest.json)");
  RunDir run = RunDir::create(dir);
  CHECK(fs::is_directory(dir + "/checkpoints"));
  CHECK(run.file(RunFile::steps) == dir + "/steps.jsonl");
  CHECK(std::string(RunDir::name(RunFile::summary)) == "summary.json");
  run.write_manifest(minimal_manifest());
  CHECK(RunDir::holds_run(dir));
  CHECK(RunDir::open(dir).read_manifest()["kind"] == "train");
  CHECK(error_of([&] { RunDir::create(dir); }).find("already holds a run") != std::string::npos);
}

TEST_CASE("RunDir: the lock is exclusive while held") {
  testing::TempDir t;
  RunDir run = RunDir::create(t / "run");
  {
    RunLock held = run.lock();
    CHECK(error_of([&] { run.lock(); }).find("another reprun process is writing") != std::string::npos);
  }
  CHECK_NOTHROW(run.lock());
}

TEST_CASE("RunDir: the manifest's format is checked") {
  testing::TempDir t;
  RunDir run = RunDir::create(t / "run");
  const std::string path = run.file(RunFile::manifest);
  testing::write(path, "{\"format\":\"reprun.run/9\"}");
  CHECK(error_of([&] { run.read_manifest(); }).find("newer than this reprun reads") != std::string::npos);
  testing::write(path, "{\"kind\":\"train\"}");
  CHECK(error_of([&] { run.read_manifest(); }) == path + ": manifest has no \"format\" field");
  testing::write(path, "{\"format\":");
  CHECK(error_of([&] { run.read_manifest(); }).find("corrupt manifest (invalid JSON") != std::string::npos);
  testing::write(path, "{\"format\":\"other/1\"}");
  CHECK(error_of([&] { run.read_manifest(); }).find("unknown format 'other/1'") != std::string::npos);
}

TEST_CASE("RunDir: the summary has its keys in order, non-finite numbers named, optional keys only when set") {
  testing::TempDir t;
  RunDir run = RunDir::create(t / "run");
  CHECK(run.read_summary()["status"] == "unknown (no summary.json)");
  RunSummary s;
  s.status = "complete";
  s.steps = 3;
  s.total_steps = 3;
  s.train_loss = NAN;
  s.has_eval_fields = true;
  s.val_accuracy = 0.5;
  s.wall_seconds = 1.25;
  s.steps_log = LogFacts{4, "xxh3:0000000000000001"};
  run.write_summary(s);
  CHECK(read_file(run.file(RunFile::summary)) ==
        "{\n  \"format\": \"reprun.run/1\",\n  \"status\": \"complete\",\n  \"steps\": 3,\n  \"total_steps\": 3,\n"
        "  \"train_loss\": \"NaN\",\n  \"val_loss\": null,\n  \"val_accuracy\": 0.5,\n  \"wall_seconds\": 1.25,\n"
        "  \"steps_log\": {\n    \"records\": 4,\n    \"xxh3\": \"xxh3:0000000000000001\"\n  }\n}\n");
  RunSummary e;
  e.status = "failed: exit 3";
  e.exit_code = 3;
  run.write_summary(e);
  ojson j = run.read_summary();
  CHECK(j["exit_code"] == 3);
  CHECK_FALSE(j.contains("train_loss"));
  CHECK_FALSE(j.contains("total_steps"));
}

TEST_CASE("RunDir: a log's facts count complete lines and digest their bytes, also across reopening") {
  testing::TempDir t;
  RunDir run = RunDir::create(t / "run");
  {
    AppendLog log = run.append(RunFile::steps);
    log.append("{\"step\":0}\n");
    log.append("{\"step\":1}\n{\"step\":2}\n");
    CHECK(log.facts().records == 3);
    CHECK(log.facts() == run.log_facts(RunFile::steps));
  }
  const std::string text = read_file(run.file(RunFile::steps));
  CHECK(run.log_facts(RunFile::steps).xxh3 == "xxh3:" + hex64(xxh3_64(text.data(), text.size())));
  // A partial last line (a crash mid-write) is not a record.
  testing::write(run.file(RunFile::steps), text + "{\"st");
  CHECK(run.log_facts(RunFile::steps).records == 3);
  CHECK(run.log_facts(RunFile::steps).xxh3 == "xxh3:" + hex64(xxh3_64(text.data(), text.size())));
  testing::write(run.file(RunFile::steps), text);
  AppendLog again = run.append(RunFile::steps);
  again.append("{\"step\":3}\n");
  CHECK(again.facts() == run.log_facts(RunFile::steps));
  CHECK(again.facts().records == 4);
  CHECK(run.log_facts(RunFile::evals).records == 0);
}

TEST_CASE("RunDir: truncating the logs back to a checkpoint") {
  testing::TempDir t;
  RunDir run = RunDir::create(t / "run");
  testing::write(run.file(RunFile::steps), "{\"step\":0}\n{\"step\":1}\n{\"step\":2}\n{\"step\":3}\n{\"st");
  testing::write(run.file(RunFile::evals), "{\"step\":2,\"val_loss\":1}\n{\"step\":3,\"val_loss\":1}\n");
  run.truncate_logs_to(2);
  CHECK(read_file(run.file(RunFile::steps)) == "{\"step\":0}\n{\"step\":1}\n{\"step\":2}\n");
  CHECK(read_file(run.file(RunFile::evals)) == "{\"step\":2,\"val_loss\":1}\n");
  run.truncate_logs_to(0); // from the start the step-0 line is written again
  CHECK(read_file(run.file(RunFile::steps)).empty());
  CHECK(read_file(run.file(RunFile::evals)).empty());
}

TEST_CASE("RunDir: checkpoints newest first by step, other names and links left out, pruning") {
  testing::TempDir t;
  RunDir run = RunDir::create(t / "run");
  for (long s : {5L, 100L, 20L, 1000000000L}) {
    testing::write(run.checkpoint_path(s), "x");
  }
  testing::write(t / "run/checkpoints/notes.txt", "x");
  testing::write(t / "run/checkpoints/step-abc.ckpt", "x");
  fs::create_symlink(run.checkpoint_path(5), t / "run/checkpoints/step-000000999.ckpt");
  CHECK(fs::path(run.checkpoint_path(20)).filename() == "step-000000020.ckpt");
  auto list = run.checkpoints();
  REQUIRE(list.size() == 4);
  CHECK(list[0].step == 1000000000L);
  CHECK(list[1].step == 100);
  CHECK(list[2].step == 20);
  CHECK(list[3].step == 5);
  run.prune_checkpoints(2);
  list = run.checkpoints();
  REQUIRE(list.size() == 2);
  CHECK(list[1].step == 100);
}

TEST_CASE("RunDir: a fork starts as the source up to its checkpoint") {
  testing::TempDir t;
  RunDir src = RunDir::create(t / "src");
  testing::write(src.file(RunFile::steps), "{\"step\":0}\n{\"step\":1}\n{\"step\":2}\n");
  testing::write(src.checkpoint_path(1), "state-1");
  RunDir dst = RunDir::create(t / "dst");
  dst.copy_start_from(src, 1);
  CHECK(read_file(dst.file(RunFile::steps)) == "{\"step\":0}\n{\"step\":1}\n");
  CHECK(read_file(dst.checkpoint_path(1)) == "state-1");
  CHECK(read_file(src.file(RunFile::steps)) == "{\"step\":0}\n{\"step\":1}\n{\"step\":2}\n");
  RunDir other = RunDir::create(t / "other");
  CHECK(error_of([&] { other.copy_start_from(src, 2); }) == src.path() + ": has no checkpoint at step 2");
}

TEST_CASE("RunDir: symbolic links inside a run directory are never followed") {
  testing::TempDir t;
  RunDir run = RunDir::create(t / "run");
  run.write_manifest(minimal_manifest());
  testing::write(t / "elsewhere.jsonl", "{\"step\":0}\n");
  fs::create_symlink(t / "elsewhere.jsonl", run.file(RunFile::steps));
  CHECK(error_of([&] { run.existing_file(RunFile::steps); }).find("is a symbolic link") != std::string::npos);
  CHECK(error_of([&] { run.append(RunFile::steps); }).find("is a symbolic link") != std::string::npos);
  CHECK(error_of([&] { run.truncate_logs_to(0); }).find("is a symbolic link") != std::string::npos);
  CHECK(read_file(t / "elsewhere.jsonl") == "{\"step\":0}\n");
  CHECK(run.existing_file(RunFile::manifest) == run.file(RunFile::manifest));
  CHECK(error_of([&] { run.existing_file(RunFile::evals); }) == run.path() + ": run directory has no evals.jsonl");
}
