// Cause and fix (audit/cause.hpp): each kind of difference gets its cause and fix, most likely
// first; effects (exec's outputs) are never offered as causes; diff_runs fills the diagnosis.
#include "reprun/audit/cause.hpp"
#include "reprun/record/run_dir.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace reprun;
using ojson = nlohmann::ordered_json;

namespace {

ojson train_manifest(const std::string& reduction, int threads) {
  return {{"kind", "train"},
          {"config", {{"optimizer", {{"lr", 0.1}}}, {"determinism", {{"threads", threads}, {"reduction", reduction}}}}}};
}

DiffResult different(DivergenceKind kind, const ojson& ma, const ojson& mb) {
  DiffResult r;
  r.a.label = "runs/a";
  r.b.label = "runs/b";
  r.a.is_run_dir = r.b.is_run_dir = true;
  r.a.status = r.b.status = "complete";
  r.a.manifest = ma;
  r.b.manifest = mb;
  if (kind != DivergenceKind::none) {
    r.divergence.found = true;
    r.divergence.kind = kind;
    r.divergence.step = 4;
  }
  r.meta = diff_manifests(ma, mb, {}, r.dataset);
  return r;
}

bool mentions(const std::vector<Diagnosis>& v, const std::string& what) {
  for (const auto& d : v) {
    if (d.cause.find(what) != std::string::npos || d.fix.find(what) != std::string::npos) {
      return true;
    }
  }
  return false;
}

} // namespace

TEST_CASE("cause: an atomic reduction with nothing else differing is the cause, fixed by the ordered reduction") {
  DiffResult r = different(DivergenceKind::computation, train_manifest("atomic", 2), train_manifest("atomic", 2));
  auto d = diagnose(r);
  REQUIRE_FALSE(d.empty());
  CHECK(d[0].cause.find("atomic reduction: both runs use determinism.reduction \"atomic\", 2 threads") == 0);
  CHECK(d[0].fix == "set determinism.reduction: ordered");
  // Only B atomic: the reduction key differs, and the atomic rule (not a hyperparameter) leads.
  r = different(DivergenceKind::computation, train_manifest("ordered", 2), train_manifest("atomic", 2));
  d = diagnose(r);
  REQUIRE_FALSE(d.empty());
  CHECK(d[0].cause.find("B uses determinism.reduction \"atomic\"") != std::string::npos);
  CHECK(d[0].fix == "set determinism.reduction: ordered");
  CHECK_FALSE(mentions(d, "hyperparameters"));
}

TEST_CASE("cause: same inputs, ordered reduction, different numbers: thread-dependent code") {
  DiffResult r = different(DivergenceKind::computation, train_manifest("ordered", 1), train_manifest("ordered", 4));
  auto d = diagnose(r);
  REQUIRE(d.size() == 1);
  CHECK(d[0].cause.find("thread-dependent code") == 0);
  CHECK(d[0].cause.find("1 vs 4 threads") != std::string::npos);
}

TEST_CASE("cause: changed data names the files; a changed hyperparameter names the key and its old value") {
  ojson a = train_manifest("ordered", 2), b = a;
  a["data"] = {{"files", {{{"path", "part-1.csv"}, {"size", 10}, {"sha256", "x"}}}}};
  b["data"] = {{"files", {{{"path", "part-1.csv"}, {"size", 10}, {"sha256", "x"}},
                          {{"path", "part-2.csv"}, {"size", 12}, {"sha256", "y"}}}}};
  b["config"]["optimizer"]["lr"] = 0.2;
  auto d = diagnose(different(DivergenceKind::computation, a, b));
  REQUIRE(d.size() == 2);
  CHECK(d[0].cause == "the training data changed (added in B: part-2.csv)");
  CHECK(d[1].cause == "hyperparameters changed: optimizer.lr 0.1 -> 0.2");
  CHECK(d[1].fix.find("set optimizer.lr back to 0.1") == 0);
}

TEST_CASE("cause: an unpinned environment variable, a different build, a changed seed first for initial weights") {
  // A program's runs (exec): the built-in trainer reads no environment variable (below).
  ojson a = {{"kind", "exec"}}, b = a;
  a["env"] = {{"OMP_NUM_THREADS", "4"}};
  b["env"] = {{"OMP_NUM_THREADS", "8"}};
  a["reprun"] = {{"compiler", "g++ 12"}};
  b["reprun"] = {{"compiler", "clang++ 16"}};
  a["seeds"] = {{"experiment", 1}};
  b["seeds"] = {{"experiment", 2}};
  auto d = diagnose(different(DivergenceKind::initial_state, a, b));
  REQUIRE(d.size() == 3);
  CHECK(d[0].cause == "the seed changed: seeds.experiment 1 -> 2");
  CHECK(d[1].cause == "a different build: reprun.compiler g++ 12 -> clang++ 16");
  CHECK(d[2].cause == "unpinned environment variable: OMP_NUM_THREADS is 4 in A and 8 in B");
  CHECK(d[2].fix == "pin OMP_NUM_THREADS in the environment: export OMP_NUM_THREADS=4 before both runs");
  // exec records a pinned variable twice (env. and pins.): named once.
  a["pins"] = {{"OMP_NUM_THREADS", "4"}};
  b["pins"] = {{"OMP_NUM_THREADS", "8"}};
  CHECK(diagnose(different(DivergenceKind::initial_state, a, b)).size() == 3);
  // Pinned by reprun in A, set by the user in B: not "unpinned", and who set each said.
  a["pins"] = {{"OMP_NUM_THREADS", {{"value", "4"}, {"source", "pinned"}}}};
  b["pins"] = {{"OMP_NUM_THREADS", {{"value", "8"}, {"source", "kept (already set)"}}}};
  CHECK(mentions(diagnose(different(DivergenceKind::initial_state, a, b)),
                 "an environment variable differs: OMP_NUM_THREADS is 4 (pinned by reprun) in A and 8 (set in the "
                 "environment) in B"));
}

TEST_CASE("cause: an exec output digest is an effect, never offered as a cause") {
  // Two runs of one exec (side by side in one work directory), both with what they read recorded.
  ojson a = {{"kind", "exec"}, {"program", {{"run_dir", "/w/run-1"}}}, {"inputs", {{"recorded", "reprun.files/2"}}},
             {"outputs", {{"exit_code", 0}, {"stdout_sha256", "aa"}}}};
  ojson b = {{"kind", "exec"}, {"program", {{"run_dir", "/w/run-2"}}}, {"inputs", {{"recorded", "reprun.files/2"}}},
             {"outputs", {{"exit_code", 0}, {"stdout_sha256", "bb"}}}};
  DiffResult r = different(DivergenceKind::none, a, b);
  REQUIRE(r.meta.size() == 2); // and program.run_dir, expected to differ
  const auto out = std::find_if(r.meta.begin(), r.meta.end(), [](const MetaDelta& m) { return m.key == "outputs.stdout_sha256"; });
  REQUIRE(out != r.meta.end());
  CHECK(is_effect(*out));
  CHECK(out->kind == MetaDelta::Kind::material); // still makes the runs differ
  CHECK(r.material_meta_count() == 1);
  auto d = diagnose(r);
  REQUIRE(d.size() == 1);
  CHECK_FALSE(mentions(d, "stdout_sha256"));
  CHECK(d[0].cause.find("it is not deterministic") != std::string::npos);
  // Recorded apart (a reference and a later run): what reprun does not record may have changed.
  ojson later = b;
  later["program"]["run_dir"] = "/elsewhere/run-1";
  d = diagnose(different(DivergenceKind::none, a, later));
  REQUIRE(d.size() == 1);
  CHECK(d[0].cause.find("it depends on something reprun does not record (an environment variable outside the recorded "
                        "ones") != std::string::npos);
  CHECK(d[0].fix.find("--env-allow NAME") != std::string::npos);
  // One run without its inputs recorded: never "not deterministic".
  later.erase("inputs");
  d = diagnose(different(DivergenceKind::none, a, later));
  REQUIRE(d.size() == 1);
  CHECK(d[0].cause == "the program's outputs differ, and what it read was not recorded in B: a changed data or code file "
                      "cannot be ruled out");
  // Two runs of one exec under --no-inputs: one moment's files, so still "not deterministic".
  ojson a_bare = a, b_bare = b;
  a_bare.erase("inputs");
  b_bare.erase("inputs");
  d = diagnose(different(DivergenceKind::none, a_bare, b_bare));
  REQUIRE(d.size() == 1);
  CHECK(d[0].cause.find("it is not deterministic") != std::string::npos);
  // Beside a real cause, the effect ranks after it and is still not named.
  a["env"] = {{"CUBLAS_WORKSPACE_CONFIG", ":4096:8"}};
  r = different(DivergenceKind::none, a, b);
  CHECK(r.meta[0].key == "env.CUBLAS_WORKSPACE_CONFIG");
  CHECK(r.meta[1].key == "outputs.stdout_sha256");
  d = diagnose(r);
  REQUIRE(d.size() == 1);
  CHECK(d[0].fix.find("pin CUBLAS_WORKSPACE_CONFIG in the environment") == 0);
  CHECK_FALSE(mentions(d, "stdout"));
  // What the program printed differs: the fix never says that no number differs (an exec run
  // without a step log, its loss on stdout), nor offers to ignore the cause.
  CHECK_FALSE(mentions(d, "no number differs"));
  CHECK_FALSE(mentions(d, "--ignore-meta"));
  // With the outputs equal, it does.
  b["outputs"] = a["outputs"];
  d = diagnose(different(DivergenceKind::none, a, b));
  REQUIRE(d.size() == 1);
  CHECK(d[0].fix.find("(no number differs: if it is expected to differ, pass --ignore-meta env.CUBLAS_WORKSPACE_CONFIG)") !=
        std::string::npos);
}

TEST_CASE("cause: a run that stopped is resumed; equal numbers with a differing field suggest --ignore-meta") {
  DiffResult r = different(DivergenceKind::ended_early, train_manifest("ordered", 2), train_manifest("ordered", 2));
  r.b.status = "interrupted";
  auto d = diagnose(r);
  REQUIRE_FALSE(d.empty());
  CHECK(d[0].cause == "run runs/b stopped before its end (status interrupted): it was killed or crashed");
  CHECK(d[0].fix == "resume it: reprun train --resume runs/b");
  ojson a = train_manifest("ordered", 2), b = a;
  a["host"] = {{"arch", "x86_64"}};
  b["host"] = {{"arch", "aarch64"}};
  d = diagnose(different(DivergenceKind::none, a, b));
  REQUIRE(d.size() == 1);
  CHECK(d[0].fix.find("--ignore-meta host.arch") != std::string::npos);
  // Several keys: the section they share, which --ignore-meta takes as a prefix (the first key alone
  // left the others counted), cut where a key's part ends.
  a = train_manifest("ordered", 2);
  b = a;
  a["config"]["optimizer"] = {{"lr", 0.1}, {"momentum", 0.9}, {"name", "sgd"}};
  b["config"]["optimizer"] = {{"lr", 0.2}, {"momentum", 0.8}, {"name", "sgd"}};
  d = diagnose(different(DivergenceKind::none, a, b));
  REQUIRE(d.size() == 1);
  INFO(d[0].cause, " | ", d[0].fix);
  CHECK(d[0].fix.find("pass --ignore-meta config.optimizer)") != std::string::npos);
}

TEST_CASE("cause: for the built-in trainer, facts its guarantees make irrelevant are listed, not counted") {
  // Issue 41, item 5: a README commit, a copy without git, OMP_NUM_THREADS and LANG, the core count
  // and libc. An exec run's program may read any of them: counted there, as before.
  for (const char* kind : {"train", "exec"}) {
    ojson a = {{"kind", kind}}, b = a;
    a["code"] = {{"git", {{"commit", "aaaa"}, {"dirty", false}}}};
    b["code"] = {{"git", nullptr}};
    a["env"] = {{"OMP_NUM_THREADS", nullptr}, {"LANG", "C.UTF-8"}};
    b["env"] = {{"OMP_NUM_THREADS", "3"}, {"LANG", "en_US.UTF-8"}};
    a["host"] = {{"arch", "x86_64"}, {"libc", "glibc 2.36"}, {"logical_cores", 2}, {"cpu_model", "AMD EPYC"}};
    b["host"] = {{"arch", "x86_64"}, {"libc", "glibc 2.39"}, {"logical_cores", 64}, {"cpu_model", "Intel Xeon"}};
    a["gpu"] = {{"count", 0}};
    b["gpu"] = {{"count", 1}};
    DiffResult r = different(DivergenceKind::none, a, b);
    const bool train = std::string(kind) == "train";
    CAPTURE(kind);
    CHECK(r.material_meta_count() == (train ? 0 : 9));
    for (const auto& m : r.meta) {
      CAPTURE(m.key);
      CHECK((m.kind == MetaDelta::Kind::informational) == train);
      CHECK(m.why.empty() != train);
    }
    CHECK(mentions(diagnose(r), "OMP_NUM_THREADS") != train);
    CHECK(mentions(diagnose(r), "a different build") != train);
  }
  // The architecture is not guaranteed, and a run on the GPU counts its GPU.
  ojson a = train_manifest("ordered", 2), b = a;
  a["host"] = {{"arch", "x86_64"}};
  b["host"] = {{"arch", "aarch64"}};
  a["gpu"] = {{"count", 0}};
  b["gpu"] = {{"count", 1}};
  b["config"]["determinism"]["device"] = "cuda";
  DatasetDelta ds;
  const auto meta = diff_manifests(a, b, {}, ds);
  for (const char* key : {"host.arch", "gpu.count"}) {
    const auto it = std::find_if(meta.begin(), meta.end(), [&](const MetaDelta& m) { return m.key == key; });
    REQUIRE(it != meta.end());
    CHECK(it->kind == MetaDelta::Kind::material);
  }
}

TEST_CASE("cause: every different result gets one, an identical one none") {
  for (auto k : {DivergenceKind::data_order, DivergenceKind::initial_state, DivergenceKind::computation,
                 DivergenceKind::ended_early, DivergenceKind::steps_differ}) {
    DiffResult r;
    r.divergence.found = true;
    r.divergence.kind = k;
    CHECK_MESSAGE(!diagnose(r).empty(), divergence_kind_name(k));
  }
  // Initial weights that differ with nothing recorded differing: initialization, not threads.
  const auto init = diagnose(different(DivergenceKind::initial_state, train_manifest("ordered", 2),
                                       train_manifest("ordered", 2)));
  REQUIRE(init.size() == 1);
  CHECK(init[0].cause.find("the initial weights differ though the seed matches") == 0);
  DiffResult bare; // two bare logs, one shorter: no status to blame
  bare.divergence.found = true;
  bare.divergence.kind = DivergenceKind::ended_early;
  CHECK(diagnose(bare).front().cause == "one step log stops earlier: its run was stopped, or the log was cut or "
                                        "copied short");
  DiffResult same;
  same.identical = true;
  CHECK(diagnose(same).empty());
}

TEST_CASE("cause: diff_runs fills the diagnosis of two run directories") {
  testing::TempDir t;
  auto make = [&](const std::string& name, const std::string& w) {
    RunDir run = RunDir::create(t / name);
    ojson m = train_manifest("atomic", 2);
    m["format"] = k_run_format;
    run.write_manifest(m);
    testing::write(run.file(RunFile::steps),
                   "{\"step\":0,\"tensors\":{\"w\":{\"xxh3\":\"w0\"}}}\n{\"step\":1,\"loss\":0.5,\"batch\":\"b\","
                   "\"tensors\":{\"w\":{\"xxh3\":\"" + w + "\"}}}\n");
    RunSummary s;
    s.status = "complete";
    run.write_summary(s);
    return run.path();
  };
  DiffResult r = diff_runs(make("a", "w1"), make("b", "w2"), {});
  REQUIRE_FALSE(r.identical);
  REQUIRE_FALSE(r.diagnosis.empty());
  CHECK(r.diagnosis[0].fix == "set determinism.reduction: ordered");
}

namespace {

// A built-in trainer's manifest reading `files` (path, size, sha256) under data.path `path`.
ojson csv_run(const std::string& path, const ojson& files, const std::string& fingerprint) {
  ojson m = train_manifest("ordered", 2);
  m["config"]["data"] = {{"kind", "csv"}, {"path", path}, {"classes", 3}};
  m["config_file"] = {{"sha256", "f-" + path}, {"left_to_data", {"data.classes"}}};
  m["config_digest"] = "d-" + path;
  m["data"] = {{"fingerprint", fingerprint}, {"samples", 178}, {"files", files}};
  m["plan"] = {{"train_samples", 134}, {"val_samples", 44}};
  return m;
}

} // namespace

TEST_CASE("cause: the same data under another path or name is no change for the built-in trainer") {
  // Issue 41, item 3: wine.csv by a relative and an absolute path (one fingerprint), and a copy
  // renamed wine_v2.csv (the fingerprint hashes names: another one, the same bytes).
  const ojson wine = {{{"path", "wine.csv"}, {"size", 11285}, {"sha256", "aa"}}};
  const ojson a = csv_run("wine.csv", wine, "sha256:1");
  DiffResult r = different(DivergenceKind::none, a, csv_run("/data/wine.csv", wine, "sha256:1"));
  CHECK(r.material_meta_count() == 0);
  for (const auto& m : r.meta) {
    CAPTURE(m.key);
    CHECK(m.kind != MetaDelta::Kind::material);
  }
  const ojson v2 = {{{"path", "wine_v2.csv"}, {"size", 11285}, {"sha256", "aa"}}};
  r = different(DivergenceKind::none, a, csv_run("wine_v2.csv", v2, "sha256:2"));
  CHECK(r.material_meta_count() == 0);
  CHECK(r.dataset.same_bytes);
  CHECK_FALSE(r.dataset.counted());
  // Other bytes, or the same bytes in another order (a folder's files are read by name), count.
  const ojson other = {{{"path", "wine.csv"}, {"size", 11285}, {"sha256", "bb"}}};
  r = different(DivergenceKind::data_order, a, csv_run("wine.csv", other, "sha256:3"));
  CHECK(r.dataset.counted());
  CHECK(diagnose(r)[0].cause == "the training data changed (changed: wine.csv)");
  const ojson two = {{{"path", "a.csv"}, {"size", 1}, {"sha256", "x"}}, {{"path", "b.csv"}, {"size", 2}, {"sha256", "y"}}};
  const ojson swapped = {{{"path", "a.csv"}, {"size", 2}, {"sha256", "y"}}, {{"path", "c.csv"}, {"size", 1}, {"sha256", "x"}}};
  r = different(DivergenceKind::data_order, csv_run("d", two, "sha256:4"), csv_run("d", swapped, "sha256:5"));
  CHECK(r.dataset.counted());
  CHECK(r.material_meta_count() > 0);
  // A program's inputs (exec) are not the built-in trainer's data: its rules stay.
  ojson ea = a, eb = csv_run("/data/wine.csv", wine, "sha256:1");
  ea["kind"] = eb["kind"] = "exec";
  CHECK(different(DivergenceKind::none, ea, eb).material_meta_count() > 0);
}

TEST_CASE("cause: values the data decides are its effects, named under its cause, never config causes") {
  // Issue 41, item 4: five rows appended (the plan's sample counts follow), a part file removed
  // (data.classes, which no config set, follows).
  const ojson f1 = {{{"path", "wine.csv"}, {"size", 11285}, {"sha256", "aa"}}};
  const ojson f2 = {{{"path", "wine.csv"}, {"size", 11609}, {"sha256", "bb"}}};
  ojson a = csv_run("wine.csv", f1, "sha256:1"), b = csv_run("wine.csv", f2, "sha256:2");
  b["data"]["samples"] = 183;
  b["plan"] = {{"train_samples", 138}, {"val_samples", 45}};
  b["config"]["data"]["classes"] = 2;
  b["config_digest"] = "d-other";
  auto d = diagnose(different(DivergenceKind::data_order, a, b));
  REQUIRE(d.size() == 1);
  CHECK(d[0].cause == "the training data changed (changed: wine.csv; with it, as effects: config.data.classes 3 -> 2, "
                      "plan.train_samples 134 -> 138 and plan.val_samples 44 -> 45)");
  CHECK_FALSE(mentions(d, "configuration differs"));
  CHECK_FALSE(mentions(d, "hyperparameters"));
  // A key the config set is a config cause even when the data changed too; and so are the plan's
  // counts when the validation fraction changed with it.
  a["config_file"]["left_to_data"] = b["config_file"]["left_to_data"] = ojson::array();
  b["config"]["data"]["validation_fraction"] = 0.3;
  d = diagnose(different(DivergenceKind::data_order, a, b));
  REQUIRE(d.size() == 2);
  CHECK(d[0].cause == "the training data changed (changed: wine.csv)");
  CHECK(d[1].cause.find("hyperparameters changed: data.classes 3 -> 2") == 0);
}

TEST_CASE("cause: another Python interpreter, and one package upgraded, each counted once") {
  auto exec_manifest = [](const char* python, const char* version, ojson packages) {
    ojson m = {{"kind", "exec"},
               {"program", {{"run_dir", "/w/run-1"}, {"interpreter", {{"path", python}, {"version", version}}}}},
               {"inputs", {{"recorded", "reprun.files/2"}}},
               {"framework", {{"name", "python"}, {"distributions", {{"count", packages.size()}, {"packages", packages}}}}}};
    m["framework"]["distributions"]["sha256"] = std::string(64, packages.dump().size() % 2 ? 'a' : 'b') + packages.dump();
    return m;
  };
  auto material = [](const DiffResult& r) {
    std::vector<std::string> keys;
    for (const auto& m : r.meta) {
      if (m.kind == MetaDelta::Kind::material) {
        keys.push_back(m.key);
      }
    }
    return keys;
  };
  // One package upgraded: its line counts, the digest of all of them follows it.
  const ojson pkgs = {{"mylib", "1.0"}, {"numpy", "1.24.2"}};
  ojson upgraded = pkgs;
  upgraded["mylib"] = "1.1";
  DiffResult r = different(DivergenceKind::none, exec_manifest("/usr/bin/python3", "Python 3.11.2", pkgs),
                           exec_manifest("/usr/bin/python3", "Python 3.11.2", upgraded));
  CHECK(material(r) == std::vector<std::string>{"framework.distributions.packages.mylib"});
  auto d = diagnose(r);
  REQUIRE(!d.empty());
  CHECK(d[0].cause == "different library versions: framework.distributions.packages.mylib 1.0 -> 1.1");
  // Another interpreter with its own packages: one cause, the packages following it.
  const ojson other = {{"numpy", "1.26.4"}, {"torch", "2.3.0"}, {"flask", "3.0"}};
  r = different(DivergenceKind::none, exec_manifest("/usr/bin/python3", "Python 3.11.2", pkgs),
                exec_manifest("/opt/venv/bin/python3", "Python 3.12.1", other));
  for (const auto& key : material(r)) {
    CHECK_MESSAGE(key.rfind("framework.distributions.packages", 0) != 0, key);
  }
  d = diagnose(r);
  REQUIRE(!d.empty());
  CHECK(d[0].cause == "another Python interpreter: /usr/bin/python3 (Python 3.11.2) -> /opt/venv/bin/python3 (Python 3.12.1); "
                      "with it, its installed distributions differ (2 -> 3 installed, 4 differ in name or version)");
  CHECK_FALSE(mentions(d, "a different build"));
  CHECK_FALSE(mentions(d, "different library versions"));
}

TEST_CASE("cause: a file read outside the places of data that changed is named first, and no cause claims the same inputs") {
  ojson a = {{"kind", "exec"}, {"program", {{"run_dir", "/w/run-1"}}}, {"inputs", {{"recorded", "reprun.files/3"}}}};
  ojson b = {{"kind", "exec"}, {"program", {{"run_dir", "/v/run-1"}}}, {"inputs", {{"recorded", "reprun.files/3"}}}};
  DiffResult r = different(DivergenceKind::computation, a, b);
  auto d = diagnose(r);
  REQUIRE_FALSE(d.empty());
  CHECK(d[0].cause.find("same inputs and environment") != std::string::npos); // nothing else known to differ
  CHECK(d[0].claims_same_inputs);
  MetaDelta m;
  m.key = "inputs.files./data/train.csv";
  m.category = "dataset";
  m.kind = MetaDelta::Kind::informational;
  m.detail = "1,500 -> 1,520 bytes, opened at t.py:3";
  m.why = "read outside the places of data (opened at t.py:3): recorded by size and time only, its bytes not compared";
  r.meta.push_back(m);
  d = diagnose(r);
  REQUIRE(d.size() == 2);
  CHECK(d[0].cause == "files the program read outside the places of data changed between the runs (recorded by size "
                      "and time only, their bytes not compared): /data/train.csv (1,500 -> 1,520 bytes, opened at t.py:3)");
  CHECK(d[0].fix.find("record both runs with --data-dir /data so that diff compares their bytes") == 0);
  CHECK(d[1].cause.find("thread-dependent or non-deterministic code in the program, if the files it read outside") == 0);
  CHECK_FALSE(d[1].claims_same_inputs);
  CHECK_FALSE(mentions(d, "same inputs"));
}
