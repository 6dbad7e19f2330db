// RunDir (record/run_dir.hpp): the run directory's one owner.
#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/record/run_dir.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>

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

TEST_CASE("RunDir: the exact messages of create, open, lock and the manifest checks") {
  testing::TempDir t;
  const std::string dir = t / "run";
  RunDir run = RunDir::create(dir);
  run.write_manifest(minimal_manifest());
  CHECK(error_of([&] { RunDir::create(dir); }) == dir + ": already holds a run; continue it with --resume or choose another -o");
  testing::write(t / "file", "x");
  CHECK(error_of([&] { RunDir::create(t / "file"); }).rfind(t / "file: cannot create run directory: ", 0) == 0);
  {
    RunLock held = run.lock();
    CHECK(error_of([&] { RunDir::open(dir).lock(); }) == dir + ": another reprun process is writing this run directory (locked)");
    RunLock moved = std::move(held); // still held after a move
    CHECK(error_of([&] { run.lock(); }) != "(no error)");
  }
  CHECK_NOTHROW(run.lock());
  const std::string path = run.file(RunFile::manifest);
  testing::write(path, "{\"format\":\"reprun.run/9\"}");
  CHECK(error_of([&] { run.read_manifest(); }) ==
        path + ": format reprun.run/9 is newer than this reprun reads (reprun.run/1); upgrade reprun");
  testing::write(path, "{\"format\":\"reprun.run/0\"}");
  CHECK(error_of([&] { run.read_manifest(); }) == path + ": unknown format 'reprun.run/0'");
  testing::write(path, "{\"format\":\"other/1\"}");
  CHECK(error_of([&] { run.read_manifest(); }) == path + ": unknown format 'other/1' (expected reprun.run/1)");
  testing::write(path, "{\"format\":1}"); // there, of another type: said so, not "no format field"
  CHECK(error_of([&] { run.read_manifest(); }) == path + ": format: must be a string, not a number");
  testing::write(path, "{\"format\":\"reprun.run/1\",\"kind\":[]}");
  CHECK(error_of([&] { run.read_manifest(); }) == path + ": kind: must be a string, not an array");
  testing::write(path, "[\"reprun.run/1\"]");
  CHECK(error_of([&] { run.read_manifest(); }) == path + ": manifest has no \"format\" field");
  testing::write(path, "{\"format\":");
  CHECK(error_of([&] { run.read_manifest(); }) == path + ": corrupt manifest (invalid JSON at byte 11)");
  testing::write(path, "");
  CHECK(error_of([&] { run.read_manifest(); }) == path + ": corrupt manifest (invalid JSON at byte 1)");
  // Written back, the manifest is JSON indented by two, keys in the order given.
  run.write_manifest(ojson{{"format", k_run_format}, {"b", 1}, {"a", 2}});
  CHECK(read_file(path) == "{\n  \"format\": \"reprun.run/1\",\n  \"b\": 1,\n  \"a\": 2\n}\n");
  CHECK(RunDir::open(dir).read_manifest()["a"] == 2);
  fs::remove(path);
  CHECK(error_of([&] { run.read_manifest(); }) == dir + ": not a run directory (no manifest.json)");
}

TEST_CASE("RunDir: every summary key, in order, with infinities named") {
  testing::TempDir t;
  RunDir run = RunDir::create(t / "run");
  RunSummary s;
  s.status = "interrupted";
  s.exit_code = 0;
  s.steps = 7;
  s.total_steps = 10;
  s.train_loss = std::numeric_limits<double>::infinity();
  s.has_eval_fields = true;
  s.val_loss = -std::numeric_limits<double>::infinity();
  s.val_accuracy = 1.0;
  s.wall_seconds = 0.5;
  s.steps_per_second = 14.0;
  s.gemm_seconds = 0.25;
  s.steps_log = LogFacts{8, "xxh3:a"};
  s.evals_log = LogFacts{1, "xxh3:b"};
  run.write_summary(s);
  CHECK(read_file(run.file(RunFile::summary)) ==
        "{\n  \"format\": \"reprun.run/1\",\n  \"status\": \"interrupted\",\n  \"exit_code\": 0,\n  \"steps\": 7,\n"
        "  \"total_steps\": 10,\n  \"train_loss\": \"Infinity\",\n  \"val_loss\": \"-Infinity\",\n"
        "  \"val_accuracy\": 1.0,\n  \"wall_seconds\": 0.5,\n  \"steps_per_second\": 14.0,\n"
        "  \"gemm_seconds\": 0.25,\n  \"steps_log\": {\n    \"records\": 8,\n    \"xxh3\": \"xxh3:a\"\n  },\n"
        "  \"evals_log\": {\n    \"records\": 1,\n    \"xxh3\": \"xxh3:b\"\n  }\n}\n");
  // A train loss without eval fields: train_loss only.
  RunSummary l;
  l.status = "running";
  l.train_loss = 0.25;
  run.write_summary(l);
  CHECK(read_file(run.file(RunFile::summary)) ==
        "{\n  \"format\": \"reprun.run/1\",\n  \"status\": \"running\",\n  \"steps\": 0,\n  \"train_loss\": 0.25,\n"
        "  \"wall_seconds\": 0.0\n}\n");
  // A damaged summary is an error naming it.
  testing::write(run.file(RunFile::summary), "{\"status\":");
  CHECK(error_of([&] { run.read_summary(); }) == run.file(RunFile::summary) + ": corrupt summary (invalid JSON at byte 11)");
  testing::write(run.file(RunFile::summary), "[]");
  CHECK(error_of([&] { run.read_summary(); }) == run.file(RunFile::summary) + ": summary is not a JSON object");
  // It is never written through a link.
  fs::remove(run.file(RunFile::summary));
  testing::write(t / "elsewhere.json", "{}");
  fs::create_symlink(t / "elsewhere.json", run.file(RunFile::summary));
  CHECK(error_of([&] { run.write_summary(l); }) ==
        run.file(RunFile::summary) + ": is a symbolic link; reprun does not follow links inside a run directory");
  CHECK(read_file(t / "elsewhere.json") == "{}");
  CHECK(error_of([&] { run.read_summary(); }).find("is a symbolic link") != std::string::npos);
}

TEST_CASE("RunDir: an empty or missing log has the facts of no bytes") {
  testing::TempDir t;
  RunDir run = RunDir::create(t / "run");
  const LogFacts none = run.log_facts(RunFile::evals);
  CHECK(none.records == 0);
  CHECK(none.xxh3 == "xxh3:" + hex64(xxh3_64("", 0)));
  AppendLog log = run.append(RunFile::evals);
  CHECK(log.facts() == none);
  CHECK(fs::exists(run.file(RunFile::evals))); // opening creates it
  CHECK(run.log_facts(RunFile::evals) == none);
  // A log of only a partial line has no records either.
  testing::write(run.file(RunFile::steps), "{\"step\":0");
  CHECK(run.log_facts(RunFile::steps) == none);
  // Facts are taken from complete lines only, so a log moved with AppendLog keeps counting.
  AppendLog moved = std::move(log);
  moved.append("{\"step\":1}\n");
  CHECK(moved.facts() == run.log_facts(RunFile::evals));
  CHECK(moved.facts().records == 1);
}

TEST_CASE("AtomicLog: the facts of what it wrote are those read back from the file, which is there only once committed") {
  testing::TempDir t;
  RunDir run = RunDir::create(t / "run");
  const std::string path = run.file(RunFile::inputs);
  {
    AtomicLog log(path);
    log.write("{\"path\":\"a\"}\n");
    CHECK_FALSE(fs::exists(path)); // not committed: nothing that looks whole
  }
  CHECK_FALSE(fs::exists(path));
  for (size_t pieces : {0, 1, 3, 100}) {
    CAPTURE(pieces);
    AtomicLog log(path);
    std::string all;
    for (size_t i = 0; i < pieces; ++i) {
      // pieces of one line or many, of bytes that need every lane of the digest
      std::string piece;
      for (size_t k = 0; k <= i % 4; ++k) {
        piece += fmt::format("{{\"path\":\"data/{:05d}.bin\",\"pad\":\"{}\"}}\n", i * 7 + k, std::string(i * 13 % 300, 'x'));
      }
      log.write(piece);
      all += piece;
    }
    const LogFacts facts = log.commit();
    CHECK(read_file(path) == all);
    CHECK(facts == run.log_facts(RunFile::inputs));
    CHECK(facts.records == static_cast<long>(std::count(all.begin(), all.end(), '\n')));
  }
}

TEST_CASE("RunDir: truncation keeps evals at step 0, stops at a foreign line, and leaves missing logs alone") {
  testing::TempDir t;
  RunDir run = RunDir::create(t / "run");
  testing::write(run.file(RunFile::steps), "{\"step\":0}\n{\"step\":1}\n");
  testing::write(run.file(RunFile::evals), "{\"step\":0,\"val_loss\":2}\n{\"step\":1,\"val_loss\":1}\n{\"ste");
  run.truncate_logs_to(0);
  CHECK(read_file(run.file(RunFile::steps)).empty());
  CHECK(read_file(run.file(RunFile::evals)) == "{\"step\":0,\"val_loss\":2}\n");
  // Past the last line: nothing goes but a partial last line.
  testing::write(run.file(RunFile::steps), "{\"step\":0}\n{\"step\":1}\n{\"st");
  run.truncate_logs_to(100);
  CHECK(read_file(run.file(RunFile::steps)) == "{\"step\":0}\n{\"step\":1}\n");
  // A line not in reprun's own layout ends what is kept.
  testing::write(run.file(RunFile::steps), "{\"step\":0}\n{ \"step\": 1}\n{\"step\":2}\n");
  truncate_log_to_step(run.file(RunFile::steps), 5);
  CHECK(read_file(run.file(RunFile::steps)) == "{\"step\":0}\n");
  truncate_log_to_step(t / "run/none.jsonl", 1);
  CHECK_FALSE(fs::exists(t / "run/none.jsonl"));
}

TEST_CASE("RunDir: checkpoint names, a missing or linked checkpoints folder, pruning to nothing") {
  testing::TempDir t;
  RunDir run = RunDir::create(t / "run");
  CHECK(run.checkpoint_path(7) == t / "run/checkpoints/step-000000007.ckpt");
  CHECK(run.checkpoints().empty());
  for (const char* name : {"step-.ckpt", "step-1.ckpt", "step-1234567890123456.ckpt", "step-12.ckpt.tmp",
                           "step-12.CKPT", "xstep-12.ckpt", "step--1.ckpt", "step-1a.ckpt"}) {
    testing::write(t / "run/checkpoints" + "/" + name, "x");
  }
  fs::create_directories(t / "run/checkpoints/step-000000050.ckpt.d");
  auto list = run.checkpoints();
  // Only step-1.ckpt (fewer digits are fine).
  REQUIRE(list.size() == 1);
  CHECK(list[0].step == 1);
  CHECK(list[0].path == t / "run/checkpoints/step-1.ckpt");
  testing::write(run.checkpoint_path(3), "x");
  testing::write(run.checkpoint_path(2), "x");
  run.prune_checkpoints(5); // fewer than keep: nothing goes
  CHECK(run.checkpoints().size() == 3);
  run.prune_checkpoints(0);
  CHECK(run.checkpoints().empty());
  CHECK(fs::exists(t / "run/checkpoints/step-.ckpt")); // other names are never removed
  // No checkpoints folder, or one that is a link: no checkpoints.
  RunDir gone = RunDir::create(t / "gone");
  fs::remove_all(t / "gone/checkpoints");
  CHECK(gone.checkpoints().empty());
  fs::create_directory_symlink(t / "run/checkpoints", t / "gone/checkpoints");
  testing::write(run.checkpoint_path(4), "x");
  CHECK(gone.checkpoints().empty());
}

TEST_CASE("RunDir: a fork from step 0 needs no checkpoint; links in the source are refused") {
  testing::TempDir t;
  RunDir src = RunDir::create(t / "src");
  testing::write(src.file(RunFile::steps), "{\"step\":0}\n{\"step\":1}\n");
  testing::write(src.file(RunFile::evals), "{\"step\":0,\"val_loss\":1}\n{\"step\":1,\"val_loss\":1}\n");
  RunDir dst = RunDir::create(t / "dst");
  dst.copy_start_from(src, 0);
  CHECK(read_file(dst.file(RunFile::steps)).empty());
  CHECK(read_file(dst.file(RunFile::evals)) == "{\"step\":0,\"val_loss\":1}\n");
  CHECK(dst.checkpoints().empty());
  // A source without logs gives a fork without logs.
  RunDir bare = RunDir::create(t / "bare");
  RunDir dst2 = RunDir::create(t / "dst2");
  dst2.copy_start_from(bare, 0);
  CHECK_FALSE(fs::exists(dst2.file(RunFile::steps)));
  // A linked checkpoint or log in the source is never read.
  testing::write(t / "outside.ckpt", "x");
  fs::create_symlink(t / "outside.ckpt", src.checkpoint_path(1));
  RunDir dst3 = RunDir::create(t / "dst3");
  CHECK(error_of([&] { dst3.copy_start_from(src, 1); }).find("is a symbolic link") != std::string::npos);
  fs::remove(src.checkpoint_path(1));
  testing::write(src.checkpoint_path(1), "x");
  fs::remove(src.file(RunFile::evals));
  fs::create_symlink(t / "outside.ckpt", src.file(RunFile::evals));
  CHECK(error_of([&] { dst3.copy_start_from(src, 1); }) ==
        src.file(RunFile::evals) + ": is a symbolic link; reprun does not follow links inside a run directory");
}

TEST_CASE("RunDir: symlinked manifests and artifact names") {
  testing::TempDir t;
  RunDir run = RunDir::create(t / "run");
  testing::write(t / "m.json", minimal_manifest().dump());
  fs::create_symlink(t / "m.json", run.file(RunFile::manifest));
  CHECK(error_of([&] { RunDir::open(t / "run"); }) ==
        run.file(RunFile::manifest) + ": is a symbolic link; reprun does not follow links inside a run directory");
  CHECK(error_of([&] { run.read_manifest(); }).find("is a symbolic link") != std::string::npos);
  CHECK(error_of([&] { run.write_manifest(minimal_manifest()); }).find("is a symbolic link") != std::string::npos);
  // An artifact keeps its file name only: no path leads outside artifacts/.
  CHECK(run.artifact_path("../../etc/x.txt") == t / "run/artifacts/x.txt");
  CHECK(fs::is_directory(t / "run/artifacts"));
  CHECK(run.artifact_path("y.bin") == t / "run/artifacts/y.bin");
  refuse_link(t / "nothing-here"); // a missing path is not a link
  CHECK(std::string(RunDir::name(RunFile::lock)) == ".lock");
  CHECK(std::string(RunDir::name(RunFile::stderr_log)) == "stderr.txt");
}

TEST_CASE("RunDir: verify_logs checks the logs against the summary's facts") {
  testing::TempDir t;
  RunDir run = RunDir::create(t / "run");
  // Longer than one read piece (1 MiB), with lines across the pieces' edges.
  std::string text;
  for (int i = 0; text.size() < (3u << 20); ++i) {
    text += "{\"step\":" + std::to_string(i) + ",\"pad\":\"" + std::string(static_cast<size_t>(i % 977), 'x') + "\"}\n";
  }
  const long n = static_cast<long>(std::count(text.begin(), text.end(), '\n'));
  testing::write(run.file(RunFile::steps), text);
  testing::write(run.file(RunFile::evals), "{\"step\":5}\n");
  const std::string steps = run.file(RunFile::steps);
  CHECK(run.log_facts(RunFile::steps) == LogFacts{n, "xxh3:" + hex64(xxh3_64(text.data(), text.size()))});
  RunSummary s;
  s.status = "complete";
  s.steps_log = run.log_facts(RunFile::steps);
  s.evals_log = run.log_facts(RunFile::evals);
  run.write_summary(s);
  auto verify = [&] { return run.verify_logs(run.read_summary()); };
  CHECK(verify().verified);
  CHECK(verify().note.empty());
  SUBCASE("a partial last line is not a record: still verified") {
    testing::write(steps, text + "{\"step\":99");
    CHECK(verify().verified);
  }
  SUBCASE("truncated") {
    testing::write(steps, text.substr(0, text.rfind('\n', text.size() - 2) + 1));
    CHECK(error_of(verify) == steps + fmt::format(": damaged: holds {} complete step records, summary.json recorded {} "
                                                  "(truncated after the run wrote it)",
                                                  n - 1, n));
  }
  SUBCASE("extended") {
    testing::write(steps, text + "{\"step\":1}\n");
    CHECK(error_of(verify).find("damaged: holds " + std::to_string(n + 1) + " complete step records") !=
          std::string::npos);
  }
  SUBCASE("edited: one byte in the middle") {
    std::string edited = text;
    edited[text.size() / 2] = edited[text.size() / 2] == 'x' ? 'y' : 'x';
    testing::write(steps, edited);
    CHECK(error_of(verify).rfind(steps + ": damaged: its " + std::to_string(n) +
                                     " step records do not match the digest in summary.json",
                                 0) == 0);
  }
  SUBCASE("evaluations are checked too") {
    testing::write(run.file(RunFile::evals), "{\"step\":6}\n");
    CHECK(error_of(verify).rfind(run.file(RunFile::evals) + ": damaged: its 1 evaluation records", 0) == 0);
  }
  SUBCASE("a summary still 'running' describes the first records: more may follow") {
    RunSummary r;
    r.status = "running";
    r.steps_log = run.log_facts(RunFile::steps);
    r.evals_log = run.log_facts(RunFile::evals);
    run.write_summary(r);
    testing::write(steps, text + "{\"step\":1}\n{\"step\":2}\n");
    CHECK(verify().verified);
    testing::write(steps, text.substr(0, 100) + "X" + text.substr(101));
    CHECK(error_of(verify).find("do not match the digest") != std::string::npos);
    testing::write(steps, text.substr(0, 1000));
    CHECK(error_of(verify).find("truncated after the run wrote it") != std::string::npos);
  }
  SUBCASE("no facts (an older run, or another tool): not verified, with a note") {
    RunSummary old;
    old.status = "complete";
    run.write_summary(old);
    testing::write(steps, "anything\n");
    const LogCheck c = verify();
    CHECK_FALSE(c.verified);
    CHECK(c.note == run.path() + ": summary.json holds no integrity facts (written by an older reprun or another "
                                 "tool): the logs were not verified");
    CHECK_FALSE(run.verify_logs(ojson{{"status", "unknown (no summary.json)"}}).verified);
  }
  SUBCASE("malformed facts name the summary") {
    ojson bad = run.read_summary();
    bad["steps_log"]["records"] = "many";
    CHECK(error_of([&] { run.verify_logs(bad); }) ==
          run.file(RunFile::summary) + ": \"steps_log\" is not {\"records\": N, \"xxh3\": \"xxh3:...\"}");
    bad["steps_log"] = 3;
    CHECK(error_of([&] { run.verify_logs(bad); }).find("is not {") != std::string::npos);
  }
}
