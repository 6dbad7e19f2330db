// Op traces of data-parallel programs: an input made by a collective is named as such with the
// collective's ordinal (which the search uses to compare every rank's k-th collective), and the
// k-th collective of a trace is found by counting c10d ops only.
#include "reprun/audit/op_localize.hpp"
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

namespace {

// A random draw with the same inputs in both runs, from generators as given.
OpDivergence draw(const std::string& device, const std::optional<OpRecord::Generator>& ga,
                  const std::optional<OpRecord::Generator>& gb, const std::string& op = "aten.bernoulli_.float") {
  OpDivergence d;
  d.kind = OpDivergence::Kind::same_inputs;
  d.a.op = d.b.op = op;
  d.a.device = d.b.device = device;
  d.a.gen = ga;
  d.b.gen = gb;
  return d;
}

} // namespace

TEST_CASE("A random draw is blamed on its generator only where the generator's state says so") {
  using G = OpRecord::Generator;
  // Seeds that differ: the seed, on any device.
  for (const char* device : {"cpu", "cuda:0"}) {
    const OpCause c = op_cause(draw(device, G{false, 1, "aa"}, G{false, 2, "bb"}), nullptr, nullptr, "");
    CHECK(c.reason.find("seeded differently in the two runs: its initial_seed() is 1 in A and 2 in B") !=
          std::string::npos);
    CHECK(c.fix_kind == "seed");
  }
  // Same seed, other state: on the CPU other draws before; on CUDA the offset, which the launch grid
  // moves too, so never the seed.
  OpCause c = op_cause(draw("cpu", G{false, 1, "aa"}, G{false, 1, "bb"}), nullptr, nullptr, "");
  CHECK(c.reason.find("drew from it a different number of times") != std::string::npos);
  c = op_cause(draw("cuda:0", G{false, 1, "aa"}, G{false, 1, "bb"}), nullptr, nullptr, "");
  CHECK(c.reason.find("its offset differs") != std::string::npos);
  CHECK(c.reason.find("launch grid") != std::string::npos);
  CHECK(c.fix_kind != "seed");
  // Same state: not the generator. The CPU's kernels where they differ; the op's own rule on CUDA.
  c = op_cause(draw("cpu", G{false, 1, "aa"}, G{false, 1, "aa"}), nullptr, nullptr, "",
               "ATEN_CPU_CAPABILITY is default in A and avx2 in B");
  CHECK(c.reason.find("so not its seed: the sampler's result depends on the CPU's kernels, which differ: "
                      "ATEN_CPU_CAPABILITY") != std::string::npos);
  CHECK(c.fix_kind == "kernels");
  c = op_cause(draw("cuda:0", G{false, 1, "aa"}, G{false, 1, "aa"}, "aten._efficient_attention_backward.default"),
               nullptr, nullptr, "");
  CHECK(c.reason.find("float atomics") != std::string::npos);
  CHECK(c.reason.find("seeded differently") == std::string::npos);
  // A generator torch does not expose: no claim about its seed.
  c = op_cause(draw("xpu:0", G{}, G{}), nullptr, nullptr, "");
  CHECK(c.reason.find("could not read") != std::string::npos);
  // No generator field: not a random draw, whatever its name.
  c = op_cause(draw("cpu", std::nullopt, std::nullopt), nullptr, nullptr, "");
  CHECK(c.reason.find("random") == std::string::npos);
  CHECK_FALSE(is_random_draw(draw("cpu", std::nullopt, std::nullopt).a));
}

namespace {

// A line of ops.jsonl with a phase and readable arguments ("argv"; none when empty).
std::string op_in(long i, const std::string& phase, const std::string& name, const std::string& in,
                  const std::string& argv, const std::string& out) {
  const std::string args = argv.empty() ? "\"args\":\"0\"" : "\"args\":\"" + argv + "\",\"argv\":\"" + argv + "\"";
  return "{\"i\":" + std::to_string(i) + ",\"step\":52,\"phase\":\"" + phase + "\",\"op\":\"" + name +
         "\",\"module\":\"\",\"mtype\":\"\",\"func\":\"<module>\",\"where\":\"t.py:22\",\"device\":\"cpu\",\"in\":[\"" +
         in + "\"],\"src\":[-1]," + args + ",\"out\":[\"" + out + "\"]}\n";
}

} // namespace

TEST_CASE("After a resume, zero_grad's ops are skipped; an optimizer op whose arguments alone differ names them") {
  testing::TempDir dir;
  // run-1 zeroes its gradients in place; the resumed process has none yet and runs no op there.
  testing::write(dir / "a.jsonl", op_in(0, "zero_grad", "aten.zero_.default", "g", "", "z") +
                                      op_in(1, "forward", "aten.mul.Tensor", "x", "", "y") +
                                      op_in(2, "optimizer", "aten.add_.Tensor", "w", "-0.052", "w1"));
  testing::write(dir / "b.jsonl", op_in(0, "forward", "aten.mul.Tensor", "x", "", "y") +
                                      op_in(1, "optimizer", "aten.add_.Tensor", "w", "-0.002", "w2"));
  // Compared in lockstep without the resume alignment, the missing zero_ is where the paths part.
  CHECK(compare_op_traces(dir / "a.jsonl", dir / "b.jsonl").kind == OpDivergence::Kind::paths_differ);
  const OpDivergence d = compare_op_traces(dir / "a.jsonl", dir / "b.jsonl", true);
  REQUIRE(d.kind == OpDivergence::Kind::inputs_differ);
  CHECK(d.arguments_differ());
  CHECK(d.a.op == "aten.add_.Tensor");
  CHECK(d.input_origin == "its non-tensor arguments differ (-0.052 in A, -0.002 in B: in the optimizer's step, the "
                          "learning rate or another hyperparameter)");
  const std::string s = op_sentence(d, OpCause{"scheduler 0 NOT restored", "save it", ""});
  CHECK(s.rfind("step 52, optimizer, t.py:22: aten.add_ \u2014 same tensor inputs, but its non-tensor arguments "
                "differ (-0.052 in A",
                0) == 0);
}

namespace {

// aten.set_ adopting a storage, as reprun_capture records it: the empty tensor it fills, then the
// storage (its bytes as the new tensor views them, written by no traced op: src -1).
std::string adopt(const std::string& bytes) {
  return "{\"i\":0,\"step\":1,\"phase\":\"forward\",\"op\":\"aten.set_.source_Storage_storage_offset\",\"module\":\"\","
         "\"mtype\":\"\",\"func\":\"f\",\"where\":\"t.py:5\",\"device\":\"cpu\",\"in\":[\"x0\",\"" +
         bytes + "\"],\"src\":[-1,-1],\"args\":\"1\",\"out\":[\"" + bytes + "\"]}\n";
}

} // namespace

TEST_CASE("A storage aten.set_ adopts that differs is an input not made by a traced op, never same inputs") {
  testing::TempDir dir;
  testing::write(dir / "a.jsonl", adopt("xa"));
  testing::write(dir / "b.jsonl", adopt("xb"));
  const OpDivergence d = compare_op_traces(dir / "a.jsonl", dir / "b.jsonl");
  CHECK(d.kind == OpDivergence::Kind::inputs_differ);
  CHECK(d.adopted_storage);
  CHECK(d.differing_inputs == std::vector<size_t>{1});
  const OpCause c = op_cause(d, nullptr, nullptr, "");
  const std::string s = op_sentence(d, c);
  CHECK(s.find("its inputs already differ") != std::string::npos);
  CHECK(s.find("input 1, the storage aten.set_ adopts, was not made by a traced op") != std::string::npos);
  CHECK(s.find("same inputs") == std::string::npos);
  CHECK(c.fix.find("worker_init_fn") != std::string::npos);
  CHECK(c.fix.find("sorted(os.listdir") != std::string::npos);
  CHECK(c.fix.find("use_deterministic_algorithms") == std::string::npos);
}

TEST_CASE("Traces fingerprinted by different methods are not compared; the same method is") {
  testing::TempDir dir;
  testing::write(dir / "x.jsonl", op(0, "aten.mul.Tensor", "x0000000000000001", -1, "x0000000000000002"));
  testing::write(dir / "x2.jsonl", op(0, "aten.mul.Tensor", "x00000000000000aa", -1, "x00000000000000bb"));
  testing::write(dir / "c.jsonl", op(0, "aten.mul.Tensor", "c00000001", -1, "c00000002"));
  CHECK(fingerprint_methods_differ(dir / "x.jsonl", dir / "x2.jsonl").empty());
  CHECK(fingerprint_methods_differ(dir / "x.jsonl", dir / "c.jsonl") == "XXH3 of the bytes in A, CRC-32 of the bytes in B");
}

TEST_CASE("After a resume, DDP's gradient bucket in another layout is no difference; another gradient is") {
  testing::TempDir dir;
  // The all-reduce of a bucket, then its views copied back into each .grad: run-1 past its first
  // iteration (the bucket rebuilt in the order the gradients became ready), the resumed process in
  // its first (parameter order). The same gradients, in another order.
  auto job = [](const std::string& first, const std::string& second, const std::string& next) {
    return op(0, "aten.mul.out", "g", -1, "b") + op(1, "c10d.allreduce_.default", "b", 0, "") +
           op(2, "aten.as_strided.default", "b", 1, first) + op(3, "aten.as_strided.default", "b", 1, second) +
           op(4, "aten.copy_.default", first, 2, first) + op(5, "aten.copy_.default", second, 3, second) +
           op(6, "aten.mul.Tensor", "w", -1, next) + "{\"end\":\"steps\",\"ops\":7,\"steps\":1}\n";
  };
  testing::write(dir / "a.jsonl", job("v-bias", "v-weight", "n"));
  testing::write(dir / "b.jsonl", job("v-weight", "v-bias", "n"));
  CHECK(compare_op_traces(dir / "a.jsonl", dir / "b.jsonl", true).kind == OpDivergence::Kind::none);
  // Without the resume alignment (two plain runs, both past their first iteration) the order counts.
  CHECK(compare_op_traces(dir / "a.jsonl", dir / "b.jsonl").kind != OpDivergence::Kind::none);
  // A gradient that differs is still the difference, found at its view.
  testing::write(dir / "b.jsonl", job("v-weight", "v-other", "n"));
  const OpDivergence d = compare_op_traces(dir / "a.jsonl", dir / "b.jsonl", true);
  CHECK(d.kind != OpDivergence::Kind::none);
  CHECK(d.a.op == "aten.as_strided.default");
  // The op after the bucket is compared as usual.
  testing::write(dir / "b.jsonl", job("v-weight", "v-bias", "n2"));
  CHECK(compare_op_traces(dir / "a.jsonl", dir / "b.jsonl", true).a.op == "aten.mul.Tensor");
}
