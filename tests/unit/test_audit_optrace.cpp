// Op traces of data-parallel programs: an input made by a collective is named as such with the
// collective's ordinal (which the search uses to compare every rank's k-th collective), and the
// k-th collective of a trace is found by counting c10d ops only.
#include "reprun/audit/optrace.hpp"
#include "testing.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace reprun;

namespace {

// One op line of ops.jsonl; `out` "" writes "out": null (not compared).
std::string op(long i, const std::string& name, const std::string& in, long src, const std::string& out) {
  return "{\"i\":" + std::to_string(i) + ",\"step\":1,\"phase\":\"backward\",\"op\":\"" + name +
         "\",\"module\":\"\",\"mtype\":\"\",\"func\":\"f\",\"where\":\"t.py:" + std::to_string(10 + i) +
         "\",\"device\":\"cpu\",\"in\":[\"" + in + "\"],\"src\":[" + std::to_string(src) + "],\"args\":\"0\",\"out\":" +
         (out.empty() ? "null" : "[\"" + out + "\"]") + "}\n";
}

std::string trace(const std::string& grad, const std::string& reduced, const std::string& updated) {
  return op(0, "aten.mul.Tensor", "x", -1, grad) + op(1, "c10d.broadcast_.default", "w", -1, "") +
         op(2, "c10d.allreduce_.default", grad, 0, "") + op(3, "aten.add_.Tensor", reduced, 2, updated) +
         "{\"end\":\"steps\",\"ops\":4,\"steps\":1}\n";
}

} // namespace

TEST_CASE("An input written by a collective names the collective and its ordinal among the collectives") {
  testing::TempDir dir;
  testing::write(dir / "a.jsonl", trace("g", "r1", "u1"));
  testing::write(dir / "b.jsonl", trace("g", "r2", "u2"));
  const OpDivergence d = compare_op_traces(dir / "a.jsonl", dir / "b.jsonl");
  CHECK(d.kind == OpDivergence::Kind::inputs_differ);
  CHECK(d.a.op == "aten.add_.Tensor");
  CHECK(d.collective == 1); // the broadcast is collective 0, the all-reduce collective 1
  CHECK(d.input_origin.find("the result of the collective op 2, c10d.allreduce_") != std::string::npos);
}

TEST_CASE("An input from uninitialized memory or a plain op has no collective") {
  testing::TempDir dir;
  testing::write(dir / "a.jsonl", op(0, "aten.empty.memory_format", "", -1, "") + op(1, "aten.add_.Tensor", "e1", 0, "u1"));
  testing::write(dir / "b.jsonl", op(0, "aten.empty.memory_format", "", -1, "") + op(1, "aten.add_.Tensor", "e2", 0, "u2"));
  const OpDivergence d = compare_op_traces(dir / "a.jsonl", dir / "b.jsonl");
  CHECK(d.kind == OpDivergence::Kind::inputs_differ);
  CHECK(d.collective == -1);
  CHECK(d.input_origin.find("uninitialized memory") != std::string::npos);
}

TEST_CASE("The k-th collective of a trace counts c10d ops only, and none past the last") {
  testing::TempDir dir;
  testing::write(dir / "a.jsonl", trace("g", "r", "u"));
  const auto first = nth_collective(dir / "a.jsonl", 0);
  const auto second = nth_collective(dir / "a.jsonl", 1);
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->op == "c10d.broadcast_.default");
  CHECK(second->op == "c10d.allreduce_.default");
  CHECK(second->in == std::vector<std::string>{"g"});
  CHECK_FALSE(nth_collective(dir / "a.jsonl", 2));
  CHECK(is_collective("c10d.allgather_.default"));
  CHECK_FALSE(is_collective("aten.add_.Tensor"));
}

TEST_CASE("A collective blamed with the same inputs gets the reduction-order cause") {
  OpDivergence d;
  d.kind = OpDivergence::Kind::same_inputs;
  d.a.op = d.b.op = "c10d.allreduce_.default";
  const OpCause c = op_cause(d, nullptr, nullptr, "");
  CHECK(c.reason.find("same on every rank") != std::string::npos);
  CHECK(c.fix.find("NCCL_ALGO") != std::string::npos);
}
