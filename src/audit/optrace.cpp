// compare_op_traces and the table of operations known to be non-deterministic.
#include "reprun/audit/optrace.hpp"

#include "reprun/core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <array>
#include <deque>
#include <fstream>
#include <string_view>
#include <unordered_map>

namespace reprun {

using ojson = nlohmann::ordered_json;

namespace {

// Reads a trace one record at a time; remembers, for every op, what the report may need later
// when an input turns out to come from it.
class TraceReader {
public:
  explicit TraceReader(const std::string& path) : m_path(path), m_in(path, std::ios::binary) {
    if (!m_in) {
      throw Error(path, "cannot read the op trace");
    }
  }

  // The next op, or nullopt at the end (then `end()` says how the trace ended).
  std::optional<OpRecord> next() {
    std::string line;
    while (std::getline(m_in, line)) {
      ++m_line;
      const bool terminated = !m_in.eof();
      ojson j = ojson::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        if (!terminated) {
          return std::nullopt; // cut short while writing: the trace ends here
        }
        throw Error(fmt::format("{}:{}", m_path, m_line), "malformed op trace record");
      }
      if (j.contains("end")) {
        m_end = j["end"].is_string() ? j["end"].get<std::string>() : "?";
        return std::nullopt;
      }
      try {
        OpRecord r;
        r.index = j.at("i").get<long>();
        r.step = j.value("step", 0L);
        r.phase = j.value("phase", "");
        r.op = j.at("op").get<std::string>();
        r.module = j.value("module", "");
        r.module_type = j.value("mtype", "");
        r.func = j.value("func", "");
        r.where = j.value("where", "");
        r.device = j.value("device", "");
        r.args = j.value("args", "");
        r.compiled = j.value("compiled", false);
        if (j.contains("gen") && j["gen"].is_object()) {
          const ojson& g = j["gen"];
          r.gen = OpRecord::Generator{g.value("own", false), g.value("seed", uint64_t{0}), g.value("state", "")};
        }
        if (j.contains("argv") && j["argv"].is_string()) {
          r.argv = j["argv"].get<std::string>();
        }
        r.in = j.at("in").get<std::vector<std::string>>();
        if (j.contains("src") && j["src"].is_array()) {
          r.src = j["src"].get<std::vector<long>>();
        }
        if (j.contains("out") && j["out"].is_array()) {
          r.out = j["out"].get<std::vector<std::string>>();
        }
        remember(r);
        return r;
      } catch (const nlohmann::json::exception& e) {
        throw Error(fmt::format("{}:{}", m_path, m_line), std::string("malformed op trace record: ") + e.what());
      }
    }
    return std::nullopt;
  }

  const std::string& end() const { return m_end; }

  // The ordinal among the collectives of op `index`, or -1 when it is not one.
  long collective_ordinal(long index) const {
    return index >= 0 && static_cast<size_t>(index) < m_ops.size() ? m_ops[static_cast<size_t>(index)].collective : -1;
  }

  // "op 12, aten.empty at train.py:30" for an earlier op of this trace.
  std::string describe(long index, bool* compared = nullptr) const {
    if (index < 0 || static_cast<size_t>(index) >= m_ops.size()) {
      return fmt::format("op {}", index);
    }
    const Seen& s = m_ops[static_cast<size_t>(index)];
    if (compared) {
      *compared = s.compared;
    }
    const std::string& where = m_strings[s.where];
    return fmt::format("op {}, {}{}", index, short_op_name(m_strings[s.op]), where.empty() ? "" : " at " + where);
  }

private:
  struct Seen {
    uint32_t op = 0, where = 0;
    bool compared = true;
    long collective = -1; // its ordinal among the trace's collectives
  };

  uint32_t intern(const std::string& s) {
    auto [it, added] = m_ids.try_emplace(s, static_cast<uint32_t>(m_strings.size()));
    if (added) {
      m_strings.push_back(s);
    }
    return it->second;
  }

  void remember(const OpRecord& r) {
    if (r.index < 0) {
      return;
    }
    if (m_ops.size() <= static_cast<size_t>(r.index)) {
      m_ops.resize(static_cast<size_t>(r.index) + 1);
    }
    const bool collective = is_collective(r.op);
    m_ops[static_cast<size_t>(r.index)] =
        Seen{intern(r.op), intern(r.where), r.out.has_value(), collective ? m_collectives : -1};
    m_collectives += collective ? 1 : 0;
  }

  std::string m_path;
  std::ifstream m_in;
  long m_line = 0;
  std::string m_end;
  std::vector<Seen> m_ops;
  long m_collectives = 0;
  std::vector<std::string> m_strings;
  std::unordered_map<std::string, uint32_t> m_ids;
};

bool contains_any(std::string_view name, std::initializer_list<std::string_view> parts) {
  return std::any_of(parts.begin(), parts.end(), [&](std::string_view p) { return name.find(p) != std::string_view::npos; });
}

// "index_add_" from "aten.index_add_.default".
std::string base_name(const std::string& op) {
  std::string s = short_op_name(op);
  auto dot = s.find('.');
  return dot == std::string::npos ? s : s.substr(dot + 1);
}

// Ops whose CUDA kernels add floats with atomics (or let duplicate indices race), per PyTorch's
// torch.use_deterministic_algorithms documentation.
bool is_cuda_atomic_op(const std::string& b) {
  return contains_any(b, {"index_add", "scatter_add", "scatter_reduce", "index_put", "put_", "index_copy",
                          "embedding_dense_backward", "embedding_bag", "upsample", "adaptive_avg_pool",
                          "adaptive_max_pool", "avg_pool3d_backward", "max_pool3d_with_indices_backward",
                          "max_unpool", "grid_sampler", "reflection_pad", "replication_pad", "ctc_loss",
                          "nll_loss2d", "histc", "bincount", "kthvalue", "median", "cumsum", "cumprod",
                          "index_reduce", "_efficient_attention_backward", "scaled_dot_product"}) ||
         b == "scatter" || b == "scatter_";
}

bool is_gemm_op(const std::string& b) {
  return contains_any(b, {"mm", "matmul", "linear", "addmv", "mv", "dot", "baddbmm", "addbmm"});
}

bool is_conv_op(const std::string& b) { return contains_any(b, {"convolution", "conv"}); }

// Ops whose CPU kernels split their reduction across intra-op threads.
bool is_cpu_threaded_reduction(const std::string& b) {
  return is_gemm_op(b) || is_conv_op(b) ||
         contains_any(b, {"sum", "mean", "norm", "var", "std", "prod", "softmax", "logsumexp", "batch_norm",
                          "layer_norm", "group_norm", "embedding_bag", "cumsum", "nll_loss", "cross_entropy",
                          "_foreach"});
}

std::string thread_counts(const ojson& fa, const ojson& fb) {
  auto get = [](const ojson& f) -> std::string {
    if (f.is_object() && f.contains("determinism") && f["determinism"].is_object()) {
      const ojson& d = f["determinism"];
      if (d.contains("intra_op_threads") && d["intra_op_threads"].is_number_integer()) {
        return std::to_string(d["intra_op_threads"].get<long>());
      }
    }
    return "";
  };
  const std::string a = get(fa), b = get(fb);
  if (a.empty() || b.empty() || a == b) {
    return "";
  }
  return fmt::format("torch's intra-op threads are {} in A and {} in B", a, b);
}

} // namespace

bool is_random_draw(const OpRecord& r) { return r.gen.has_value(); }

bool adopts_storage(const OpRecord& r) {
  return base_name(r.op) == "set_" && r.op.find("source_Storage") != std::string::npos;
}

bool is_collective(const std::string& op) { return op.rfind("c10d.", 0) == 0; }

std::string op_trace_end(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    return "";
  }
  constexpr std::streamoff k_tail = 4096; // the end line is some 60 bytes
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - k_tail);
  std::string tail(static_cast<size_t>(size - from), '\0');
  in.seekg(from);
  if (!in.read(tail.data(), static_cast<std::streamsize>(tail.size())) || tail.empty() || tail.back() != '\n') {
    return ""; // unreadable, empty, or a last line cut short
  }
  tail.pop_back();
  const size_t start = tail.rfind('\n');
  const ojson j = ojson::parse(start == std::string::npos ? tail : tail.substr(start + 1), nullptr, false);
  if (!j.is_object() || !j.contains("end") || !j["end"].is_string()) {
    return "";
  }
  return j["end"].get<std::string>();
}

std::optional<OpRecord> nth_collective(const std::string& path, long k) {
  TraceReader t(path);
  long seen = 0;
  while (std::optional<OpRecord> r = t.next()) {
    if (is_collective(r->op) && seen++ == k) {
      return r;
    }
  }
  return std::nullopt;
}

std::string short_op_name(const std::string& op) {
  // namespace.name.overload -> namespace.name
  auto last = op.rfind('.');
  auto first = op.find('.');
  return last != std::string::npos && last != first ? op.substr(0, last) : op;
}

OpDivergence compare_op_traces(const std::string& path_a, const std::string& path_b, bool resume_aligned) {
  TraceReader ta(path_a), tb(path_b);
  OpDivergence d;
  // The engine's gradient bookkeeping outside any module: skipped on both sides of a resume pair.
  auto read = [&](TraceReader& t) {
    std::optional<OpRecord> r = t.next();
    while (resume_aligned && r &&
           (r->phase == "zero_grad" || (r->phase == "backward" && r->module.empty() &&
                                        (r->op == "aten.detach.default" || r->op == "aten.add_.Tensor")))) {
      r = t.next();
    }
    return r;
  };
  std::deque<OpRecord> held_a, held_b; // ops read ahead, to be compared next
  auto next = [&](TraceReader& t) {
    std::deque<OpRecord>& held = &t == &ta ? held_a : held_b;
    if (held.empty()) {
      return read(t);
    }
    std::optional<OpRecord> r = std::move(held.front());
    held.pop_front();
    return r;
  };
  for (;;) {
    std::optional<OpRecord> ra = next(ta), rb = next(tb);
    d.compiled_code = d.compiled_code || (ra && ra->compiled) || (rb && rb->compiled);
    if (!ra || !rb) {
      d.end_a = ta.end();
      d.end_b = tb.end();
      if (ra || rb) {
        d.kind = OpDivergence::Kind::paths_differ;
        d.a = ra ? *ra : OpRecord{};
        d.b = rb ? *rb : OpRecord{};
      }
      return d;
    }
    if (resume_aligned && is_collective(ra->op) && ra->op == rb->op && ra->phase == "backward") {
      // DDP's gradient bucket: the resumed process's first iteration lays the gradients out in the
      // bucket in parameter order, a process past its first iteration in the order they became ready
      // (the reducer rebuilds its buckets once). The collective's input and the views and copies
      // that follow it (the averaged gradients back into each .grad) then come in another order:
      // compared as a set of outputs, so that only another gradient counts as a difference.
      // Read ahead into `held` (compared one by one after all when the sets differ).
      auto views = [&](TraceReader& t, std::deque<OpRecord>& held) {
        std::vector<std::string> outs;
        for (std::optional<OpRecord> r = read(t); r; r = read(t)) {
          const bool view = r->phase == "backward" && r->module.empty() &&
                            (r->op == "aten.as_strided.default" || r->op == "aten.copy_.default");
          held.push_back(std::move(*r));
          if (!view) {
            break;
          }
          const OpRecord& v = held.back();
          outs.push_back(v.op + "=" + (v.out ? fmt::format("{}", fmt::join(*v.out, ",")) : std::string()));
        }
        std::sort(outs.begin(), outs.end());
        return outs;
      };
      const auto va = views(ta, held_a);
      const auto vb = views(tb, held_b);
      if (va == vb && !va.empty()) {
        const size_t n = va.size();
        held_a.erase(held_a.begin(), held_a.begin() + static_cast<long>(n));
        held_b.erase(held_b.begin(), held_b.begin() + static_cast<long>(n));
        d.ops_compared += 1 + static_cast<long>(n);
        continue;
      }
    }
    if (ra->op != rb->op) {
      d.kind = OpDivergence::Kind::paths_differ;
      d.a = std::move(*ra);
      d.b = std::move(*rb);
      return d;
    }
    if (ra->out && rb->out && *ra->out != *rb->out) {
      d.a = std::move(*ra);
      d.b = std::move(*rb);
      for (size_t k = 0; k < d.a.in.size(); ++k) {
        if (k >= d.b.in.size() || d.a.in[k] != d.b.in[k]) {
          d.differing_inputs.push_back(k);
        }
      }
      // A draw into uninitialized memory (dropout's bernoulli_ on an empty_like) reads only its generator.
      const bool draw_into_empty =
          is_random_draw(d.a) && !d.differing_inputs.empty() &&
          std::all_of(d.differing_inputs.begin(), d.differing_inputs.end(), [&](size_t k) {
            bool compared = true;
            const long src = k < d.a.src.size() ? d.a.src[k] : -1;
            return src >= 0 && (ta.describe(src, &compared), !compared);
          });
      if ((d.differing_inputs.empty() || draw_into_empty) && d.a.in.size() == d.b.in.size() && d.a.args == d.b.args) {
        d.kind = OpDivergence::Kind::same_inputs;
        d.differing_inputs.clear();
        return d;
      }
      d.kind = OpDivergence::Kind::inputs_differ;
      if (d.differing_inputs.empty()) {
        d.input_origin = "its non-tensor arguments differ (numbers computed from data that differs)";
        if (d.a.argv && d.b.argv) {
          d.input_origin = fmt::format("its non-tensor arguments differ ({} in A, {} in B{})", *d.a.argv, *d.b.argv,
                                       d.a.phase == "optimizer" ? ": in the optimizer's step, the learning rate "
                                                                  "or another hyperparameter"
                                                                : "");
        }
        return d;
      }
      const size_t k = d.differing_inputs.front();
      const long src = k < d.a.src.size() ? d.a.src[k] : -1;
      bool compared = true;
      if (src < 0 && adopts_storage(d.a) && k + 1 == d.a.in.size()) {
        // aten.set_ with a storage: the tensor's bytes are the storage's, written by no traced op.
        d.adopted_storage = true;
        d.input_origin = fmt::format("input {}, the storage {} adopts, was not made by a traced op: a DataLoader "
                                     "worker's batch (its shared memory), a tensor torch.load read from a file, "
                                     "or another process's memory",
                                     k, short_op_name(d.a.op));
      } else if (src < 0) {
        d.input_origin = fmt::format("input {} was not made by a traced op: it comes from Python or numpy "
                                     "(torch.tensor or torch.from_numpy of data that differs), a DataLoader "
                                     "worker, a file or another process",
                                     k);
      } else {
        std::string from = ta.describe(src, &compared);
        d.collective = ta.collective_ordinal(src);
        d.input_origin = d.collective >= 0
                             ? fmt::format("input {} is the result of the collective {}: the other ranks' "
                                           "contributions to it differ (the rank whose inputs differ is the "
                                           "one to follow)",
                                           k, from)
                         : compared ? fmt::format("input {} was written identically in both runs by {}, then "
                                                "changed outside the traced ops (numpy on shared memory, "
                                                "another thread or process)",
                                                k, from)
                                  : fmt::format("input {} is uninitialized memory from {} (its contents differ "
                                                "by design: fill it before use)",
                                                k, from);
      }
      return d;
    }
    ++d.ops_compared;
  }
}

std::string kernel_difference(const ojson& ma, const ojson& mb) {
  std::vector<std::string> out;
  auto at = [](const ojson& m, std::initializer_list<const char*> path) -> ojson {
    const ojson* j = &m;
    for (const char* k : path) {
      if (!j->is_object() || !j->contains(k)) {
        return ojson();
      }
      j = &(*j)[k];
    }
    return *j;
  };
  auto text = [](const ojson& v) { return v.is_string() ? v.get<std::string>() : v.is_null() ? "unset" : v.dump(); };
  for (const char* name : {"OPENBLAS_CORETYPE", "ATEN_CPU_CAPABILITY", "DNNL_MAX_CPU_ISA", "ONEDNN_MAX_CPU_ISA",
                           "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR"}) {
    const ojson a = at(ma, {"env", name}), b = at(mb, {"env", name});
    if (a != b) {
      out.push_back(fmt::format("{} is {} in A and {} in B", name, text(a), text(b)));
    }
  }
  const ojson ca = at(ma, {"framework", "cpu", "capability"}), cb = at(mb, {"framework", "cpu", "capability"});
  if (!ca.is_null() && !cb.is_null() && ca != cb) {
    out.push_back(fmt::format("torch's own kernels use {} in A and {} in B", text(ca), text(cb)));
  }
  const ojson oa = at(ma, {"framework", "cpu", "openblas"}), ob = at(mb, {"framework", "cpu", "openblas"});
  std::set<std::pair<std::string, std::string>> said;
  if (oa.is_object() && ob.is_object()) {
    for (const auto& [lib, fa] : oa.items()) {
      if (!ob.contains(lib) || !fa.is_object() || !ob[lib].is_object()) {
        continue;
      }
      const std::string a = text(fa.value("core", ojson())), b = text(ob[lib].value("core", ojson()));
      if (a != b && said.insert({a, b}).second) {
        out.push_back(fmt::format("OpenBLAS ({}) chose {} in A and {} in B", lib, a, b));
      }
    }
  }
  std::string joined;
  for (const auto& s : out) {
    joined += (joined.empty() ? "" : "; ") + s;
  }
  return joined;
}

OpCause op_cause(const OpDivergence& d, const ojson& framework_a, const ojson& framework_b,
                 const std::string& env_threads, const std::string& kernels) {
  const char* kernel_fix = "the same kernels in every run and on every machine: OPENBLAS_CORETYPE (OpenBLAS) and "
                           "ATEN_CPU_CAPABILITY (PyTorch's own kernels) set for every run to what the oldest CPU has; "
                           "or compare with a tolerance (reprun diff --rtol/--atol)";
  OpCause c;
  if (d.kind == OpDivergence::Kind::inputs_differ && d.adopted_storage) {
    c.reason = "the inputs of this op already differ, and no earlier op made the difference: " + d.input_origin;
    c.fix = "make the data the same in every run: seed what DataLoader workers draw (a worker_init_fn that seeds "
            "numpy and random from torch.initial_seed(), and a seeded generator= for the loader), and load the "
            "same files in a fixed order (sorted(os.listdir(...)), not the directory's order)";
    return c;
  }
  if (d.kind == OpDivergence::Kind::inputs_differ) {
    c.reason = "the inputs of this op already differ, and no earlier op made the difference: " + d.input_origin;
    c.fix = "make the data the same in every run: seed the data order and augmentation (a torch.Generator "
            "seeded from a fixed seed, worker_init_fn for DataLoader workers), and do not iterate over sets "
            "of strings (their order follows PYTHONHASHSEED)";
    return c;
  }
  if (d.kind == OpDivergence::Kind::paths_differ) {
    c.reason = "the runs executed different operations from here: control flow depends on something that "
               "differs (data, a random draw, the environment, timing)";
    c.fix = "find what the branch before this op reads, and make it the same in every run";
    return c;
  }
  if (is_collective(d.a.op)) {
    c.reason = "a collective whose inputs are the same on every rank gave different results: the order in which "
               "it sums the ranks' contributions is not fixed (NCCL chooses its algorithm, protocol and channels at "
               "run time; another world size or topology changes them)";
    c.fix = "fix the reduction order: with NCCL, the same NCCL_ALGO, NCCL_PROTO and NCCL_MIN_NCHANNELS = "
            "NCCL_MAX_NCHANNELS in every run, on the same GPUs and world size";
    return c;
  }
  const std::string b = base_name(d.a.op);
  const bool cuda = d.a.device.rfind("cuda", 0) == 0;
  std::string threads = thread_counts(framework_a, framework_b);
  if (!env_threads.empty()) {
    threads = threads.empty() ? env_threads : threads + " (" + env_threads + ")";
  }
  // A random draw is blamed on its generator only where what the generator was before the draw says
  // so; with the same generator state the draw is an op like any other (its kernel, its device).
  const bool random = is_random_draw(d.a) && is_random_draw(d.b);
  const bool gen_known = random && d.a.gen->known() && d.b.gen->known();
  const std::string which =
      !random ? "" : d.a.gen->own ? "the torch.Generator the program passed to it (generator=)"
                                  : fmt::format("torch's default {} generator", cuda ? "CUDA" : "CPU");
  bool generator_explains = true;
  if (random && !gen_known) {
    c.reason = "a random draw from a generator reprun could not read (not the CPU's or a CUDA device's): seeded "
               "differently, drawn from a different number of times before, or its kernel differs";
    c.fix = "torch.manual_seed(SEED) with a fixed SEED before the first draw, and a seeded torch.Generator for "
            "data order and augmentation";
    c.fix_kind = "seed";
  } else if (random && d.a.gen->seed != d.b.gen->seed) {
    const OpRecord::Generator& ga = *d.a.gen;
    const OpRecord::Generator& gb = *d.b.gen;
    c.reason = fmt::format("a random draw from {}, seeded differently in the two runs: its initial_seed() is {} in A "
                           "and {} in B (seeded from the clock or the OS's entropy: {}, or a seed that is not fixed)",
                           which, ga.seed, gb.seed, ga.own ? "generator.seed()" : "torch.seed(), no torch.manual_seed");
    c.fix = ga.own ? "seed that generator with a fixed seed where the program makes it (generator.manual_seed(SEED), "
                     "not generator.seed()); torch.manual_seed does not reach it"
                   : "torch.manual_seed(SEED) with a fixed SEED before the first draw";
    c.fix_kind = ga.own ? "seed_own" : "seed";
  } else if (random && d.a.gen->state != d.b.gen->state && cuda) {
    // A CUDA generator's state is its seed and an offset, which each random kernel advances by an
    // amount its launch grid decides (the GPU's SM count, the torch build): not evidence of other draws.
    c.reason = fmt::format("a random draw from {}, seeded alike (initial_seed() {} in both runs); its offset "
                           "differs, and on CUDA the offset each random kernel advances it by depends on its launch "
                           "grid (the GPU's number of SMs, the torch build) as well as on the number of draws before",
                           which, d.a.gen->seed);
    c.fix = "run every run on the same GPU model with the same torch build; where they are the same, find the "
            "random ops before this one that differ in number between the runs (a branch or a loop that depends "
            "on data or timing), and make them the same";
  } else if (random && d.a.gen->state != d.b.gen->state) {
    c.reason = fmt::format("a random draw from {}: seeded alike (initial_seed() {} in both runs), but its state "
                           "differs: the runs drew from it a different number of times before this op, or set its "
                           "state differently",
                           which, d.a.gen->seed);
    c.fix = "find the draws before this op that differ in number between the runs (a branch or a loop that depends "
            "on data or timing) or a state set differently, and make them the same";
  } else {
    generator_explains = false;
  }
  if (generator_explains) {
    return c;
  }
  const std::string drew = random ? fmt::format("a random draw from {}, whose state was the same in both runs before "
                                                "it drew, so not its seed: ",
                                                which)
                                  : "";
  if (cuda && is_conv_op(b)) {
    c.reason = "non-deterministic on CUDA: cuDNN chooses its convolution algorithm per run (benchmark) and "
               "some algorithms add with atomics";
    c.fix = "torch.backends.cudnn.deterministic = True; torch.backends.cudnn.benchmark = False (or "
            "torch.use_deterministic_algorithms(True))";
    c.fix_kind = "deterministic";
  } else if (cuda && is_cuda_atomic_op(b)) {
    c.reason = "non-deterministic on CUDA (float atomics: the order of the additions changes from run to run)";
    c.fix = "torch.use_deterministic_algorithms(True)";
    c.fix_kind = "deterministic";
  } else if (cuda && is_gemm_op(b)) {
    c.reason = "cuBLAS may split the reduction differently (workspace, split-K, TF32)";
    c.fix = "torch.use_deterministic_algorithms(True) with CUBLAS_WORKSPACE_CONFIG=:4096:8, and "
            "torch.backends.cuda.matmul.allow_tf32 = False";
    c.fix_kind = "deterministic";
  } else if (!cuda && is_cpu_threaded_reduction(b) && !threads.empty()) {
    c.reason = "on the CPU its result depends on the number of threads that split the reduction, and " + threads;
    c.fix = "the same thread count in every run: torch.set_num_threads(N) at the start (or OMP_NUM_THREADS=N "
            "for every run)";
    c.fix_kind = "threads";
  } else if (!cuda && !kernels.empty() && d.kind == OpDivergence::Kind::same_inputs) {
    c.reason = (random ? "the sampler's result" : "its result") + std::string(" depends on the CPU's kernels, which "
                                                                             "differ: ") + kernels;
    c.fix = kernel_fix;
    c.fix_kind = "kernels";
  } else if (random) {
    c.reason = "the random kernel itself gave other numbers (another instruction set, device or torch build)";
    c.fix = "run every run on the same kind of machine with the same torch build and kernel settings "
            "(ATEN_CPU_CAPABILITY), or compare with a tolerance (reprun diff --rtol/--atol)";
  } else {
    c.reason = fmt::format("not a documented non-deterministic op{}", cuda ? " on CUDA" : " on the CPU");
    c.fix = "torch.use_deterministic_algorithms(True) (PyTorch then uses deterministic kernels or raises on "
            "ops that have none)";
  }
  c.reason = drew + c.reason;
  return c;
}

std::string op_sentence(const OpDivergence& d, const OpCause& cause) {
  const OpRecord& r = d.a.op.empty() ? d.b : d.a;
  std::string place;
  if (!r.func.empty() && r.func != "<module>") {
    place = r.func + (r.where.empty() ? "" : " (" + r.where + ")");
  } else {
    place = r.where.empty() ? "(no source line in your files)" : r.where;
  }
  std::string module = r.module.empty() ? "" : fmt::format(", module {}{}", r.module,
                                                           r.module_type.empty() ? "" : " (" + r.module_type + ")");
  std::string what;
  switch (d.kind) {
  case OpDivergence::Kind::same_inputs:
    what = "same inputs, different outputs";
    break;
  case OpDivergence::Kind::inputs_differ:
    what = d.arguments_differ() ? fmt::format("same tensor inputs, but {}", d.input_origin) : "its inputs already differ";
    break;
  case OpDivergence::Kind::paths_differ:
    if (!d.a.op.empty() && !d.b.op.empty()) {
      what = fmt::format("the runs part here: B ran {} ({})", short_op_name(d.b.op), d.b.where);
    } else {
      what = fmt::format("the runs part here: {} trace ends first", d.a.op.empty() ? "A's" : "B's");
    }
    break;
  case OpDivergence::Kind::none:
    return "the op traces agree";
  }
  std::string reason = cause.reason;
  if (!reason.empty()) {
    reason[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(reason[0])));
  }
  // An op before the training started (model init, data set construction) is no step's.
  const std::string when = r.phase == "init" ? std::string("before the first step (initialization)")
                                              : fmt::format("step {}, {}", r.step, r.phase);
  return fmt::format("{}, {}{}: {} \u2014 {}. {}. Fix: {}.", when, place, module, short_op_name(r.op), what, reason,
                     cause.fix);
}

} // namespace reprun
