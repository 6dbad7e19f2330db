// What diff says of the frameworks' and machines' facts (audit/manifest_diff.cpp, audit/diff.cpp):
// a fact one run never recorded is not a difference; a plain Python program's packages are compared;
// the CPU, host and kernel facts are listed, not counted, where every step record agrees, and named
// as the likely cause with a fix that acts on them where the numbers part.
#include "diff_logs.hpp"
#include "reprun/audit/diff.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace reprun;
using namespace difftest;

TEST_CASE("manifest diff: a framework fact one run never recorded is not a difference") {
  ojson a = {{"framework", {{"torch", "1.13"}, {"devices", {{"cpu", nullptr}}}, {"steps_seen", 1}}}};
  ojson b = {{"framework", {{"torch", "1.13"}, {"devices", ojson::object()}, {"steps_seen", 0}}}};
  DatasetDelta ds;
  auto deltas = diff_manifests(a, b, {}, ds);
  const MetaDelta* dev = delta(deltas, "framework.devices.cpu");
  REQUIRE(dev);
  CHECK(dev->kind == MetaDelta::Kind::unrecorded);
  CHECK(dev->why == "not recorded in B: it made no optimizer step");
  CHECK(deltas.front().kind != MetaDelta::Kind::material);
  // A device both runs recorded, differently, is a difference.
  ojson c = a;
  c["framework"]["devices"] = {{"cuda:0", "H100"}};
  DatasetDelta ds2;
  auto real = diff_manifests(a, c, {}, ds2);
  CHECK(delta(real, "framework.devices.cuda:0")->kind == MetaDelta::Kind::material);
  // A capture that stopped, and a run with no framework facts at all.
  ojson stopped = b;
  stopped["framework"]["steps_seen"] = 1;
  stopped["framework"]["capture_stopped"] = "step 1: ValueError: x";
  DatasetDelta ds3;
  CHECK(delta(diff_manifests(a, stopped, {}, ds3), "framework.devices.cpu")->why ==
        "not recorded in B: its capture stopped");
  DatasetDelta ds4;
  auto none = diff_manifests(ojson::object({{"format", "x"}}), a, {}, ds4);
  CHECK(delta(none, "framework.torch")->kind == MetaDelta::Kind::unrecorded);
}

TEST_CASE("diff: the machines' facts are listed, not counted, where every step record agrees") {
  testing::TempDir t;
  auto on_machine = [&](const std::string& name, const std::string& log, const std::string& cpu, const std::string& core) {
    const std::string path = make_run(t, name, log);
    RunDir run = RunDir::open(path);
    ojson m = run.read_manifest();
    m["kind"] = "exec"; // a program's run: the built-in trainer's guarantees do not cover it
    m["host"] = {{"cpu_model", cpu}, {"isa", {"avx2"}}};
    m["env"] = {{"OPENBLAS_CORETYPE", core}, {"PYTHONHASHSEED", "0"}};
    m["framework"] = {{"name", "pytorch"}, {"torch", "2.5.1"}, {"cpu", {{"openblas", {{"libblas.so.3", {{"core", core}}}}}}}};
    run.write_manifest(m);
    return path;
  };
  DiffResult same = diff_runs(on_machine("a", log_of(3), "EPYC", "Cooperlake"), on_machine("b", log_of(3), "Xeon", "Haswell"), {});
  CHECK(same.identical);
  CHECK(same.verdict.rfind("IDENTICAL", 0) == 0);
  for (const char* key : {"host.cpu_model", "env.OPENBLAS_CORETYPE", "framework.cpu.openblas"}) {
    const MetaDelta* m = nullptr;
    for (const auto& d : same.meta) {
      if (d.key.rfind(key, 0) == 0) {
        m = &d;
      }
    }
    REQUIRE_MESSAGE(m, key);
    CHECK(m->kind == MetaDelta::Kind::informational);
    CHECK(m->why == "a machine fact: the numbers agree");
  }
  CHECK(std::any_of(same.notes.begin(), same.notes.end(),
                    [](const std::string& n) { return n.find("different machines or CPU kernels") != std::string::npos; }));
  // Where the numbers part, the same facts are counted, and the kernels are the likely cause with a fix that acts on them.
  DiffResult parted = diff_runs(on_machine("c", log_of(3), "EPYC", "Cooperlake"),
                                on_machine("d", replace_line(log_of(3), 2, line(2, 0.75)), "Xeon", "Haswell"), {});
  CHECK_FALSE(parted.identical);
  const MetaDelta* core = nullptr;
  for (const auto& d : parted.meta) {
    if (d.key == "env.OPENBLAS_CORETYPE") {
      core = &d;
    }
  }
  REQUIRE(core);
  CHECK(core->kind == MetaDelta::Kind::material);
  CHECK(core->category == "cpu");
  std::string causes;
  for (const auto& d : parted.diagnosis) {
    causes += d.cause + " | fix: " + d.fix + "\n";
  }
  CHECK_MESSAGE(causes.find("the CPU's kernels differ") != std::string::npos, causes);
  CHECK_MESSAGE(causes.find("OPENBLAS_CORETYPE for OpenBLAS") != std::string::npos, causes);
}

TEST_CASE("manifest diff: a plain Python program's packages are compared; torch's facts it lacks are not recorded") {
  auto plain = [](const std::string& numpy) {
    return ojson{{"framework", {{"name", "python"}, {"python", "3.11.2"},
                                {"distributions", {{"count", 1}, {"sha256", numpy}, {"packages", {{"numpy", numpy}}}}}}}};
  };
  DatasetDelta ds;
  auto packages = diff_manifests(plain("1.24.2"), plain("1.26.4"), {}, ds);
  const MetaDelta* np = delta(packages, "framework.distributions.packages.numpy");
  REQUIRE(np);
  CHECK(np->kind == MetaDelta::Kind::material);
  CHECK(np->category == "libraries");
  ojson torch = {{"framework", {{"name", "pytorch"}, {"python", "3.11.2"}, {"torch", "2.5.1"}, {"steps_seen", 1}}}};
  DatasetDelta ds2;
  auto mixed = diff_manifests(plain("1.24.2"), torch, {}, ds2);
  const MetaDelta* t = delta(mixed, "framework.torch");
  REQUIRE(t);
  CHECK(t->kind == MetaDelta::Kind::unrecorded);
  CHECK(t->why.find("not recorded in A: it never imported torch") == 0);
  CHECK(delta(mixed, "framework.name")->kind == MetaDelta::Kind::material);
}

