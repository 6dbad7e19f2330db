// The resume audit: loads matched to saves (a shared checkpoint is an error, a pre-existing one a
// note), the boundary table's verdicts, the cause of an op after a resume, and the events reader.
#include "reprun/audit/resume.hpp"
#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>

#include <filesystem>

using namespace reprun;
using ojson = nlohmann::ordered_json;

namespace {

CheckpointEvent save(long step, const std::string& digest, const std::string& file = "/r/ckpt.pt") {
  CheckpointEvent e;
  e.save = true;
  e.step = step;
  e.kind = "checkpoint";
  e.holds = {"optimizer", "parameters"};
  e.path = "ckpt.pt";
  e.file = file;
  e.sha256 = digest;
  e.where = "train.py:88";
  return e;
}

CheckpointEvent load(const std::string& digest, long resumes = -1) {
  CheckpointEvent e;
  e.save = false;
  e.path = "ckpt.pt";
  e.file = "/r/ckpt.pt";
  e.sha256 = digest;
  e.holds = {"parameters"};
  e.where = "train.py:30";
  e.resumes_step = resumes;
  return e;
}

RunEvents run_of(int run, std::vector<CheckpointEvent> io) {
  ProcessEvents p;
  p.io = std::move(io);
  return {run, {p}};
}

ojson state(const char* kind, const char* digest, ojson detail = ojson::object()) {
  return {{"kind", kind}, {"digest", digest}, {"detail", std::move(detail)}};
}

StateEvent at(const char* when, long step, ojson states) {
  StateEvent s;
  s.at = when;
  s.step = step;
  s.states = std::move(states);
  s.draws = ojson::object();
  return s;
}

const BoundaryRow& row(const ResumeAudit& a, const std::string& name) {
  for (const auto& r : a.rows) {
    if (r.name == name) {
      return r;
    }
  }
  FAIL("no row " << name);
  return a.rows.front();
}

} // namespace

TEST_CASE("check_sharing: a load of bytes another run saved is an error; its own run's bytes are not") {
  // run-1 and run-2 save the same bytes (deterministic): run-2 loading its own is fine.
  auto fine = check_sharing({run_of(1, {save(20, "d20"), save(40, "d40")}), run_of(2, {save(20, "d20"), load("d20")})});
  CHECK(fine.error.empty());
  // run-2 loads run-1's last checkpoint before saving anything (a shared path): the error names both runs.
  auto shared = check_sharing({run_of(1, {save(40, "d40")}), run_of(2, {load("d40"), save(40, "d40")})});
  CHECK(shared.error.find("run-2 loaded ckpt.pt (train.py:30), the bytes run-1 of this exec saved") != std::string::npos);
  CHECK(shared.error.find("{run_dir}") != std::string::npos);
  // A checkpoint no run saved (left by an earlier exec): a note. The path two runs wrote: a note.
  auto before = check_sharing({run_of(1, {load("old")})});
  CHECK(before.error.empty());
  REQUIRE(before.notes.size() == 1);
  CHECK(before.notes[0].find("a checkpoint no run of this exec saved") != std::string::npos);
  auto written = check_sharing({run_of(1, {save(40, "a")}), run_of(2, {save(40, "b")})});
  REQUIRE(written.notes.size() == 1);
  CHECK(written.notes[0].find("run-2 wrote ckpt.pt (train.py:88), which run-1 also wrote") != std::string::npos);
}

TEST_CASE("resuming_load: the killed process's checkpoint the resumed one loaded, and its save") {
  ProcessEvents killed, resumed;
  killed.io = {save(20, "d20"), save(40, "d40")};
  resumed.io = {load("pretrained"), load("d40", 40)};
  const CheckpointEvent* l = resuming_load(resumed);
  REQUIRE(l);
  CHECK(l->resumes_step == 40);
  REQUIRE(save_of(killed, *l));
  CHECK(save_of(killed, *l)->step == 40);
  CHECK(resuming_load(ProcessEvents{}) == nullptr);
  CHECK(first_checkpoint(killed)->step == 20);
  CHECK(last_checkpoint_by(killed, 39)->step == 20);
  CHECK(last_checkpoint_by(killed, 19) == nullptr);
}

TEST_CASE("the boundary table: restored, never restored, restored to the save, unused, missing") {
  ProcessEvents run1, resumed;
  const ojson first = {{"parameters", state("parameters", "p0")},
                       {"torch CPU generator", state("generator", "g0")},
                       {"numpy global generator", state("generator", "n0")},
                       {"DataLoader generator (t.py:4)", state("generator", "l0")},
                       {"scheduler 0 (StepLR)", state("scheduler", "s0", {{"last_epoch", 0}})}};
  ojson saved = first, boundary = first;
  saved["parameters"]["digest"] = boundary["parameters"]["digest"] = "p40";
  saved["torch CPU generator"]["digest"] = "g40";
  boundary["torch CPU generator"]["digest"] = "g40b"; // drawn from after the save
  saved["DataLoader generator (t.py:4)"]["digest"] = boundary["DataLoader generator (t.py:4)"]["digest"] = "l40";
  saved["scheduler 0 (StepLR)"] = boundary["scheduler 0 (StepLR)"] = state("scheduler", "s40", {{"last_epoch", 2}});
  boundary["batch"] = state("batch", "b41");
  run1.states = {at("first", 0, first), at("save", 40, saved), at("boundary", 40, boundary)};
  run1.states[2].draws = {{"default", {{"op", "aten.randperm"}, {"where", "train.py:90"}}}};
  ojson after = boundary;
  after["torch CPU generator"]["digest"] = "g40";                 // restored to the save
  after["DataLoader generator (t.py:4)"]["digest"] = "l0";        // what seeding gives: never restored
  after["numpy global generator"]["digest"] = "n-other";          // unseeded, never drawn: unused
  after["batch"]["digest"] = "b-other";
  after.erase("scheduler 0 (StepLR)");                              // no scheduler after the resume
  resumed.states = {at("resumed", 40, after)};
  ResumeAudit a;
  a.resumed_from = 40;
  fill_boundary_table(a, run1, resumed);
  REQUIRE(a.has_table);
  CHECK(row(a, "parameters").verdict == BoundaryRow::Verdict::restored);
  CHECK(row(a, "torch CPU generator").verdict == BoundaryRow::Verdict::at_save);
  CHECK(row(a, "torch CPU generator").detail.find("aten.randperm at train.py:90") != std::string::npos);
  CHECK(row(a, "DataLoader generator (t.py:4)").verdict == BoundaryRow::Verdict::never_restored);
  CHECK(row(a, "numpy global generator").verdict == BoundaryRow::Verdict::unused);
  CHECK(row(a, "scheduler 0 (StepLR)").verdict == BoundaryRow::Verdict::missing);
  CHECK(row(a, "scheduler 0 (StepLR)").is_state());
  CHECK(row(a, "batch").verdict == BoundaryRow::Verdict::not_restored);
  // The batch follows from the loader's generator, whose fix it takes.
  CHECK(row(a, "batch").detail.find("DataLoader generator (t.py:4)") != std::string::npos);
  CHECK(row(a, "batch").fix == row(a, "DataLoader generator (t.py:4)").fix);
  CHECK(a.state_not_restored());
  CHECK(a.not_restored_names(2) == "torch CPU generator, DataLoader generator (t.py:4) and 2 more");
  // No state at run-1's boundary: no table, and why.
  ResumeAudit none;
  none.resumed_from = 20;
  fill_boundary_table(none, run1, resumed);
  CHECK_FALSE(none.has_table);
  CHECK(none.no_table.find("after step 20") != std::string::npos);
}

TEST_CASE("the boundary table: a generator the program set back to its state at the save is restored by the program") {
  // numpy's state is saved and set back; Python's is not: the number of numpy draws before the boundary
  // follows Python's, so numpy differs there too, but only Python's random is not restored.
  ProcessEvents run1, resumed;
  const ojson first = {{"numpy global generator", state("generator", "n0")}, {"Python random", state("generator", "r0")}};
  ojson saved = {{"numpy global generator", state("generator", "n40")}, {"Python random", state("generator", "r40")}};
  ojson boundary = {{"numpy global generator", state("generator", "n40b")},
                    {"Python random", state("generator", "r40b")},
                    {"batch", state("batch", "b41")}};
  run1.states = {at("first", 0, first), at("save", 40, saved), at("boundary", 40, boundary)};
  ojson after = {{"numpy global generator", state("generator", "n40c")},
                 {"Python random", state("generator", "r0b")},
                 {"batch", state("batch", "b-other")}};
  resumed.states = {at("resumed", 40, after)};
  resumed.restores = {RestoreEvent{40, "numpy global generator", "n40", "np.random.set_state", "t.py:13"}};
  ResumeAudit a;
  a.resumed_from = 40;
  fill_boundary_table(a, run1, resumed);
  REQUIRE(a.has_table);
  const BoundaryRow& np = row(a, "numpy global generator");
  CHECK(np.verdict == BoundaryRow::Verdict::by_program);
  CHECK(np.restored());
  CHECK(np.shows_detail());
  CHECK(np.verdict_words() == "restored by the program");
  CHECK(np.detail == "np.random.set_state at t.py:13 set it back to its state at the save; it differs at the "
                     "boundary because its draws differ in number, decided by Python random, which was not restored");
  CHECK(row(a, "Python random").verdict == BoundaryRow::Verdict::not_restored);
  CHECK(row(a, "batch").detail == "its order is drawn from Python random, which was not restored");
  CHECK(row(a, "batch").fix == row(a, "Python random").fix);
  CHECK(a.not_restored_names() == "Python random, batch");
  // A restore to another state than the save's is not one.
  resumed.restores[0].digest = "n7";
  ResumeAudit b;
  b.resumed_from = 40;
  fill_boundary_table(b, run1, resumed);
  CHECK(row(b, "numpy global generator").verdict == BoundaryRow::Verdict::not_restored);
  CHECK(row(b, "batch").detail == "its order is drawn from numpy global generator and Python random, which were not restored");
}

TEST_CASE("resume_op_cause: a random draw is the generator, the optimizer's op the optimizer's state") {
  ResumeAudit a;
  a.resumed_from = 40;
  BoundaryRow gen{BoundaryRow::Verdict::never_restored, "torch CPU generator", "generator", "", "draws differ", "save it"};
  BoundaryRow opt{BoundaryRow::Verdict::not_restored, "optimizer 0 (Adam): state", "optimizer", "", "restarts", "save opt"};
  a.rows = {opt, gen};
  OpDivergence d;
  d.kind = OpDivergence::Kind::same_inputs;
  d.a.op = "aten.bernoulli_.float";
  d.a.gen = OpRecord::Generator{false, 7, "ab12"}; // the capture marks a random draw with its generator
  d.a.phase = "forward";
  auto c = resume_op_cause(d, a);
  REQUIRE(c);
  CHECK(c->reason.rfind("torch CPU generator NOT restored at the resume after step 40", 0) == 0);
  CHECK(c->fix == "save it");
  d.kind = OpDivergence::Kind::inputs_differ;
  d.a.op = "aten.addcdiv_.default";
  d.a.gen.reset();
  d.a.phase = "optimizer";
  c = resume_op_cause(d, a);
  REQUIRE(c);
  CHECK(c->reason.rfind("optimizer 0 (Adam): state NOT restored", 0) == 0);
  // Every state restored: the op's own cause stands.
  a.rows = {};
  CHECK_FALSE(resume_op_cause(d, a));
}

TEST_CASE("read_events: saves, loads, states and restores; a killed process's partial last line is not an event") {
  testing::TempDir dir;
  const std::string path = (std::filesystem::path(dir.path()) / "events.jsonl").string();
  write_file_atomic(path, R"({"event":"save","step":20,"kind":"checkpoint","holds":["optimizer"],"path":"c.pt","file":"/x/c.pt","sha256":"ab","bytes":9,"where":"t.py:8","after_backward":true,"pid":7}
{"event":"load","step":0,"path":"c.pt","sha256":"ab","resumes_step":20,"where":"t.py:3","pid":8}
{"event":"state","at":"boundary","step":20,"states":{"batch":{"kind":"batch","digest":"z"}},"draws":{}}
{"event":"restore","step":20,"generator":"Python random","digest":"q","call":"random.setstate","where":"t.py:5","pid":8}
{"event":"save","step":30,"ki)");
  const ProcessEvents e = read_events(path);
  REQUIRE(e.io.size() == 2);
  CHECK(e.io[0].save);
  CHECK(e.io[0].after_backward);
  CHECK(e.io[0].holds == std::vector<std::string>{"optimizer"});
  CHECK(e.io[1].resumes_step == 20);
  CHECK(e.io[1].line == 2);
  REQUIRE(e.states.size() == 1);
  CHECK(e.states[0].states["batch"]["digest"] == "z");
  REQUIRE(e.restores.size() == 1);
  CHECK(e.restores[0].generator == "Python random");
  CHECK(e.restores[0].digest == "q");
  CHECK(e.restores[0].call == "random.setstate");
  CHECK(e.restores[0].where == "t.py:5");
  CHECK_FALSE(read_events(path + ".missing").any());
  write_file_atomic(path, "{\"event\":\"save\",\"step\":1}\nnot json\n");
  CHECK(testing::error_of([&] { read_events(path); }).find("events.jsonl:2: not an event") != std::string::npos);
}

TEST_CASE("the boundary table of a data-parallel job: a row per state and rank; rank 0's state on rank 1 is named") {
  // Run-1: each rank's own generator at the boundary; the resumed job: rank 1 holds rank 0's.
  auto ranked = [](StateEvent s, long rank) {
    s.rank = rank;
    return s;
  };
  const ojson r0 = {{"parameters", state("parameters", "p4")}, {"torch CPU generator", state("generator", "g-rank0")}};
  ojson r1 = r0;
  r1["torch CPU generator"]["digest"] = "g-rank1";
  ojson first1 = r1;
  first1["torch CPU generator"]["digest"] = "g-seed1";
  ProcessEvents run1, resumed;
  run1.states = {ranked(at("first", 0, r0), 0), ranked(at("first", 0, first1), 1), ranked(at("boundary", 4, r0), 0),
                 ranked(at("boundary", 4, r1), 1)};
  resumed.states = {ranked(at("resumed", 4, r0), 0), ranked(at("resumed", 4, r0), 1)}; // rank 0's state on both
  ResumeAudit a;
  a.resumed_from = 4;
  a.world_size = 2;
  fill_rank_tables(a, {{run1.of_rank(0), resumed.of_rank(0)}, {run1.of_rank(1), resumed.of_rank(1)}});
  REQUIRE(a.has_table);
  REQUIRE(a.rows.size() == 4);
  CHECK(a.rows[0].rank == 0);
  CHECK(a.rows[2].rank == 1);
  const auto lost = a.not_restored();
  REQUIRE(lost.size() == 1);
  CHECK(lost[0]->name == "torch CPU generator");
  CHECK(lost[0]->rank == 1);
  CHECK(lost[0]->detail.rfind("it equals rank 0's state", 0) == 0);
  CHECK(a.not_restored_names() == "torch CPU generator on rank 1");
  CHECK(resume_causes(a).front().first.find("torch CPU generator NOT restored on rank 1 at the resume after step 4") == 0);
  // A rank whose run-1 kept no boundary state: no table, and which rank.
  ResumeAudit none;
  none.resumed_from = 4;
  none.world_size = 2;
  ProcessEvents bare;
  fill_rank_tables(none, {{run1.of_rank(0), resumed.of_rank(0)}, {bare, resumed.of_rank(1)}});
  CHECK_FALSE(none.has_table);
  CHECK(none.no_table.rfind("rank 1: ", 0) == 0);
}

TEST_CASE("read_events: a data-parallel job's events carry their rank; rank and stop events") {
  testing::TempDir dir;
  const std::string path = (std::filesystem::path(dir.path()) / "events.jsonl").string();
  write_file_atomic(path, R"({"event":"rank","step":0,"world_size":2,"pid":41,"rank":1}
{"event":"save","step":4,"kind":"checkpoint","path":"c.pt","sha256":"ab","where":"t.py:8","pid":40,"rank":0}
{"event":"state","at":"boundary","step":4,"states":{},"draws":{},"pid":41,"rank":1}
{"event":"stop","step":5,"world_size":2,"pid":41,"rank":1}
)");
  const ProcessEvents e = read_events(path);
  REQUIRE(e.ranks.size() == 2);
  CHECK_FALSE(e.ranks[0].stopped);
  CHECK(e.ranks[1].stopped);
  CHECK(e.ranks[1].pid == 41);
  CHECK(e.ranks[1].step == 5);
  CHECK(e.ranks[1].world_size == 2);
  CHECK(e.io.at(0).rank == 0);
  const ProcessEvents one = e.of_rank(1);
  CHECK(one.io.empty());
  CHECK(one.states.size() == 1);
  CHECK(one.ranks.size() == 2);
  CHECK(e.of_rank(0).io.size() == 1);
}
