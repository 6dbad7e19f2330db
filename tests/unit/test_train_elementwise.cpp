// The per-element bodies the CUDA kernels run (elementwise.hpp), run here on the CPU over the
// trainer's real shapes and compared bit for bit with the CPU backend: what a GPU run computes for
// each element is, by construction, what these tests check (only the scheduling is the GPU's).
#include "reprun/train/backend.hpp"
#include "reprun/train/elementwise.hpp"
#include "reprun/train/gemm.hpp"
#include "reprun/core/threadpool.hpp"

#include <cmath>
#include <cstring>
#include <doctest/doctest.h>
#include <vector>

using namespace reprun;

namespace {
// Values in [-scale, scale), a few exact zeros and negative zeros among them (sign-of-zero rules
// are where an innocent-looking rewrite of an expression changes a bit).
std::vector<float> random_values(size_t n, uint32_t tag, float scale = 1.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const Philox4 r = draw(7, Stream::init, tag, static_cast<uint32_t>(i));
    v[i] = (2.0f * to_unit_float(r[0]) - 1.0f) * scale;
    if (r[1] % 97 == 0) {
      v[i] = (r[1] & 0x100) ? -0.0f : 0.0f;
    }
  }
  return v;
}

template <class T> bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
} // namespace

TEST_CASE("gemm_chain per element equals the CPU backend's GEMM on the MLP's shapes, every kernel") {
  ThreadPool pool(2);
  // (M, N, K): mnist-mlp's first layer forward, its weight gradient (a transposed view), the
  // backward data pass, quickstart's logits, and ragged edges.
  struct Shape {
    long M, N, K;
    bool transposed;
  };
  for (const Shape s : {Shape{128, 256, 784, false}, Shape{784, 256, 128, true}, Shape{128, 256, 256, false},
                        Shape{32, 3, 16, false}, Shape{7, 33, 1, false}, Shape{65, 129, 300, true}}) {
    const auto A = random_values(static_cast<size_t>(s.M * s.K), 1);
    const auto B = random_values(static_cast<size_t>(s.K * s.N), 2);
    const auto C0 = random_values(static_cast<size_t>(s.M * s.N), 3);
    // A (M x K) as stored, or stored as (K x M) and read transposed, as weight_grad reads a^T.
    const MatView view = s.transposed ? MatView{A.data(), 1, s.M} : MatView{A.data(), s.K, 1};
    std::vector<float> ref = C0;
    for (long i = 0; i < s.M; ++i) {
      for (long j = 0; j < s.N; ++j) {
        float& c = ref[static_cast<size_t>(i * s.N + j)];
        c = elem::gemm_chain(view.data, view.rs, view.cs, B.data(), s.N, i, j, s.K, c);
      }
    }
    for (const char* kernel : {"portable", "avx2", "avx512"}) {
      gemm_force_kernel(kernel); // capped at what this CPU has
      auto be = make_cpu_backend(&pool);
      std::vector<float> C = C0;
      be->gemm_acc(s.M, s.N, s.K, view, B.data(), s.N, C.data(), s.N);
      CHECK_MESSAGE(same_bits(C, ref), "shape ", s.M, "x", s.N, "x", s.K, " kernel ", kernel);
    }
    gemm_force_kernel("");
  }
}

TEST_CASE("The ordered weight gradient per element equals the CPU backend's, continuing across micro-batches") {
  const long m = 32, in = 784, out = 256;
  auto be = make_cpu_backend(nullptr);
  const auto a = random_values(static_cast<size_t>(2 * m * in), 4);
  const auto g = random_values(static_cast<size_t>(2 * m * out), 5, 0.01f);
  std::vector<float> gw(static_cast<size_t>(in * out), 0.0f), gb(static_cast<size_t>(out), 0.0f);
  std::vector<float> rw = gw, rb = gb;
  for (long mb = 0; mb < 2; ++mb) { // two micro-batches: the chains continue
    const float* am = a.data() + mb * m * in;
    const float* gm = g.data() + mb * m * out;
    be->weight_grad(Reduction::ordered, am, gm, m, in, out, gw.data(), gb.data());
    for (long i = 0; i < in; ++i) {
      for (long o = 0; o < out; ++o) {
        float& c = rw[static_cast<size_t>(i * out + o)];
        c = elem::gemm_chain(am, 1, in, gm, out, i, o, m, c);
      }
    }
    for (long o = 0; o < out; ++o) {
      rb[static_cast<size_t>(o)] = elem::column_sum(gm, m, out, o, rb[static_cast<size_t>(o)]);
    }
  }
  CHECK(same_bits(gw, rw));
  CHECK(same_bits(gb, rb));
}

TEST_CASE("softmax_xent_row and softmax_eval_row equal the CPU backend's losses, gradients and hits") {
  auto be = make_cpu_backend(nullptr);
  for (long C : {10L, 3L, 1L}) {
    const long m = 128;
    auto logits = random_values(static_cast<size_t>(m * C), 6, 8.0f);
    logits[5] = 80.0f; // a large logit, and rows with ties
    for (long j = 0; j < C; ++j) {
      logits[static_cast<size_t>(C + j)] = 0.25f;
    }
    std::vector<int32_t> y(static_cast<size_t>(m));
    for (long r = 0; r < m; ++r) {
      y[static_cast<size_t>(r)] = static_cast<int32_t>((r * 7) % C);
    }
    const double inv_batch = 1.0 / 256.0;
    std::vector<float> g(static_cast<size_t>(m * C)), rg(g.size());
    double loss = 0.25, rloss = 0.25; // a chain another micro-batch began
    be->softmax_xent(logits.data(), y.data(), m, C, inv_batch, g.data(), &loss);
    for (long r = 0; r < m; ++r) {
      rloss += elem::softmax_xent_row(logits.data() + r * C, y[static_cast<size_t>(r)], C, inv_batch,
                                      rg.data() + r * C);
    }
    CHECK(same_bits(loss, rloss));
    CHECK(same_bits(g, rg));
    double eloss = 0.0, reloss = 0.0;
    long correct = 0, rcorrect = 0;
    be->softmax_eval(logits.data(), y.data(), m, C, &eloss, &correct);
    for (long r = 0; r < m; ++r) {
      int hit = 0;
      reloss += elem::softmax_eval_row(logits.data() + r * C, y[static_cast<size_t>(r)], C, &hit);
      rcorrect += hit;
    }
    CHECK(same_bits(eloss, reloss));
    CHECK(correct == rcorrect);
  }
}

TEST_CASE("Activations, their gradients, dropout and multiply per element equal the CPU backend's") {
  auto be = make_cpu_backend(nullptr);
  const long m = 32, n = 255; // n not a multiple of 4: the last Philox draw is partly used
  const size_t count = static_cast<size_t>(m * n);
  auto z = random_values(count, 8, 6.0f);
  z[3] = 25.0f;
  z[4] = -0.3f;
  const auto dh = random_values(count, 9);
  for (Activation f : {Activation::relu, Activation::tanh}) {
    std::vector<float> act(count), gz(count), ract(count), rgz(count);
    be->activation(f, z.data(), act.data(), count);
    be->activation_grad(f, z.data(), dh.data(), gz.data(), count);
    for (size_t i = 0; i < count; ++i) {
      ract[i] = f == Activation::tanh ? mathfn::tanh(z[i]) : elem::relu(z[i]);
      rgz[i] = f == Activation::tanh ? elem::tanh_grad(z[i], dh[i]) : elem::relu_grad(z[i], dh[i]);
    }
    CHECK(same_bits(act, ract));
    CHECK(same_bits(gz, rgz));
  }
  const DropoutDraw d{12345, 17, 1, 64, 0.3};
  std::vector<float> act = z, mask(count), ract = z, rmask(count);
  be->dropout(d, act.data(), mask.data(), m, n);
  const float keep_scale = static_cast<float>(1.0 / (1.0 - d.p));
  for (long r = 0; r < m; ++r) {
    for (long u = 0; u < n; u += 4) {
      elem::dropout_quad(d.seed, d.step, d.layer, static_cast<uint32_t>(d.row0 + r), u, n, static_cast<float>(d.p),
                         keep_scale, ract.data() + r * n, rmask.data() + r * n);
    }
  }
  CHECK(same_bits(act, ract));
  CHECK(same_bits(mask, rmask));
  std::vector<float> x = dh, rx = dh;
  be->multiply(x.data(), mask.data(), count);
  for (size_t i = 0; i < count; ++i) {
    rx[i] = rx[i] * mask[i];
  }
  CHECK(same_bits(x, rx));
}

TEST_CASE("A dense layer's passes in the GEMM's epilogue equal the GEMM then each pass, every kernel and thread count") {
  // dense_forward: z = b + a W, then act = f(z); dense_backward_data: dh = g W^T from +0, dh *=
  // mask, gz = dh * f'(z). Their epilogues run on each tile of the product: the bits must be those
  // of the passes run one after the other over the whole output.
  struct Shape {
    long m, in, out;
  };
  for (const Shape s : {Shape{128, 784, 256}, Shape{128, 256, 256}, Shape{53, 17, 300}, Shape{1, 3, 1}}) {
    const size_t nz = static_cast<size_t>(s.m * s.out), nh = static_cast<size_t>(s.m * s.in);
    const auto a = random_values(static_cast<size_t>(s.m * s.in), 20), w = random_values(static_cast<size_t>(s.in * s.out), 21, 0.1f);
    const auto b = random_values(static_cast<size_t>(s.out), 22), g = random_values(nz, 23, 0.01f);
    const auto zin = random_values(nh, 24, 3.0f), mask = random_values(nh, 25);
    std::vector<float> wt(static_cast<size_t>(s.in * s.out));
    for (long i = 0; i < s.in; ++i) {
      for (long o = 0; o < s.out; ++o) {
        wt[static_cast<size_t>(o * s.in + i)] = w[static_cast<size_t>(i * s.out + o)];
      }
    }
    for (const char* kernel : {"portable", "avx2", "avx512"}) {
      gemm_force_kernel(kernel); // capped at what this CPU has
      for (Activation f : {Activation::relu, Activation::tanh}) {
        auto ref_be = make_cpu_backend(nullptr);
        std::vector<float> rz(nz), ract(nz), rdh(nh), rgz(nh);
        gemm_set(s.m, s.out, s.in, MatView{a.data(), s.in, 1}, w.data(), s.out, b.data(), rz.data(), s.out, nullptr);
        ref_be->activation(f, rz.data(), ract.data(), nz);
        for (bool masked : {false, true}) {
          gemm_set(s.m, s.in, s.out, MatView{g.data(), s.out, 1}, wt.data(), s.in, nullptr, rdh.data(), s.in, nullptr);
          if (masked) {
            ref_be->multiply(rdh.data(), mask.data(), nh);
          }
          ref_be->activation_grad(f, zin.data(), rdh.data(), rgz.data(), nh);
          for (int threads : {1, 2}) {
            ThreadPool pool(threads);
            auto be = make_cpu_backend(&pool);
            std::vector<float> z(nz, -1.0f), act(nz, -1.0f), dh(nh, -1.0f), gz(nh, -1.0f);
            be->dense_forward(a.data(), w.data(), b.data(), s.m, s.in, s.out, z.data(), f, act.data());
            be->dense_backward_data(g.data(), wt.data(), s.m, s.out, s.in, masked ? mask.data() : nullptr, f,
                                    zin.data(), dh.data(), gz.data());
            CAPTURE(kernel);
            CAPTURE(threads);
            CAPTURE(s.m);
            CAPTURE(s.in);
            CAPTURE(s.out);
            CHECK(same_bits(z, rz));
            CHECK(same_bits(act, ract));
            CHECK(same_bits(dh, rdh));
            CHECK(same_bits(gz, rgz));
          }
        }
      }
    }
    gemm_force_kernel("");
  }
}

TEST_CASE("A hint of rows to prefetch changes no value, whatever the rows and the tiles that fetch them") {
  const long m = 128, in = 784, out = 256;
  const auto a = random_values(static_cast<size_t>(m * in), 40), w = random_values(static_cast<size_t>(in * out), 41, 0.1f);
  const auto b = random_values(static_cast<size_t>(out), 42);
  const auto data = random_values(static_cast<size_t>(1000 * 77), 43); // rows of 77 floats: not whole lines
  std::vector<float> ref(static_cast<size_t>(m * out)), ref_act(ref.size());
  make_cpu_backend(nullptr)->dense_forward(a.data(), w.data(), b.data(), m, in, out, ref.data(), Activation::relu,
                                           ref_act.data());
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    auto be = make_cpu_backend(&pool);
    for (size_t n : {size_t{0}, size_t{1}, size_t{128}, size_t{1000}}) {
      std::vector<const void*> rows;
      for (size_t r = 0; r < n; ++r) {
        rows.push_back(data.data() + (r * 389) % 1000 * 77); // scattered, as a batch's rows are
      }
      be->prefetch_rows(rows.data(), rows.size(), 77 * sizeof(float));
      for (int pass = 0; pass < 3; ++pass) { // the hint used up, then left spent
        std::vector<float> z(ref.size(), -1.0f), act(ref.size(), -1.0f);
        be->dense_forward(a.data(), w.data(), b.data(), m, in, out, z.data(), Activation::relu, act.data());
        CHECK(same_bits(z, ref));
        CHECK(same_bits(act, ref_act));
      }
    }
  }
}

TEST_CASE("Transposes, and softmax split over threads, give the bits of one thread") {
  for (auto [rows, cols] : {std::pair{256L, 256L}, {784L, 256L}, {300L, 130L}, {256L, 10L}, {33L, 5L}}) {
    const auto w = random_values(static_cast<size_t>(rows * cols), 30);
    std::vector<float> ref(w.size());
    for (long i = 0; i < rows; ++i) {
      for (long o = 0; o < cols; ++o) {
        ref[static_cast<size_t>(o * rows + i)] = w[static_cast<size_t>(i * cols + o)];
      }
    }
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      auto be = make_cpu_backend(&pool);
      std::vector<float> wt(w.size(), -1.0f);
      be->transpose(w.data(), rows, cols, wt.data());
      CHECK(same_bits(wt, ref));
    }
  }
  for (long m : {128L, 37L, 16L, 1L}) {
    const long C = 10;
    const auto logits = random_values(static_cast<size_t>(m * C), 31, 8.0f);
    std::vector<int32_t> y(static_cast<size_t>(m));
    for (long r = 0; r < m; ++r) {
      y[static_cast<size_t>(r)] = static_cast<int32_t>((r * 3) % C);
    }
    std::vector<float> rg(static_cast<size_t>(m * C));
    double rloss = 0.125; // a chain another micro-batch began
    for (long r = 0; r < m; ++r) {
      rloss += elem::softmax_xent_row(logits.data() + r * C, y[static_cast<size_t>(r)], C, 1.0 / 128.0,
                                      rg.data() + r * C);
    }
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      auto be = make_cpu_backend(&pool);
      std::vector<float> g(rg.size(), -1.0f);
      double loss = 0.125;
      be->softmax_xent(logits.data(), y.data(), m, C, 1.0 / 128.0, g.data(), &loss);
      CAPTURE(m);
      CAPTURE(threads);
      CHECK(same_bits(loss, rloss));
      CHECK(same_bits(g, rg));
    }
  }
}

TEST_CASE("The first weight gradient of a step, from whatever gw holds, equals zeroing it and weight_grad") {
  const long m = 24, in = 300, out = 130; // tiles with edges on both sides
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    auto be = make_cpu_backend(&pool);
    const auto a = random_values(static_cast<size_t>(2 * m * in), 14);
    const auto g = random_values(static_cast<size_t>(2 * m * out), 15, 0.01f);
    std::vector<float> gw(static_cast<size_t>(in * out), std::nanf("")), gb(static_cast<size_t>(out), -1.0f);
    std::vector<float> rw(gw.size(), 0.0f), rb(gb.size(), 0.0f);
    be->weight_grad_from_zero(a.data(), g.data(), m, in, out, gw.data(), gb.data());
    be->weight_grad(Reduction::ordered, a.data() + m * in, g.data() + m * out, m, in, out, gw.data(), gb.data());
    for (long mb = 0; mb < 2; ++mb) {
      be->weight_grad(Reduction::ordered, a.data() + mb * m * in, g.data() + mb * m * out, m, in, out, rw.data(),
                      rb.data());
    }
    CHECK(same_bits(gw, rw));
    CHECK(same_bits(gb, rb));
    be->weight_grad_from_zero(a.data(), g.data(), 0, in, out, gw.data(), gb.data()); // no sample: zeros
    CHECK(same_bits(gw, std::vector<float>(gw.size(), 0.0f)));
    CHECK(same_bits(gb, std::vector<float>(gb.size(), 0.0f)));
  }
}

TEST_CASE("SGD and Adam per element, and the 8-lane sum of squares, equal the CPU backend's update, every kernel") {
  ThreadPool pool(2);
  auto be = make_cpu_backend(&pool);
  // Three tasks of one tensor, the last ragged; then four, the last ragged and not a multiple of 8
  // (its squares' lanes end part-way).
  for (size_t n : {size_t{40000 + 5}, size_t{3 * 16384 + 1003}}) {
    for (const char* kernel : {"portable", "avx2", "avx512"}) {
      gemm_force_kernel(kernel); // capped at what this CPU has
      CAPTURE(kernel);
      CAPTURE(n);
      const auto w0 = random_values(n, 10), g = random_values(n, 11, 0.1f), m0 = random_values(n, 12, 0.01f);
      auto v0 = random_values(n, 13, 0.001f);
      for (float& x : v0) {
        x = x * x; // a second moment is not negative
      }
      UpdateRule sgd;
      sgd.kind = UpdateRule::Kind::sgd;
      sgd.lr = 0.05f;
      sgd.momentum = 0.9f;
      UpdateRule adam;
      adam.kind = UpdateRule::Kind::adam;
      adam.lr = 1e-3f;
      adam.beta1 = 0.9f;
      adam.beta2 = 0.999f;
      adam.eps = 1e-8f;
      adam.bias_correction2_sqrt = 0.0447101778f;
      adam.step_size = 0.0100000007f;
      for (UpdateRule rule : {sgd, adam}) {
        for (float wd : {0.0f, 1e-4f}) {
          rule.weight_decay = wd;
          std::vector<float> w = w0, m = m0, v = v0, rw = w0, rm = m0, rv = v0;
          std::vector<UpdateTask> tasks;
          for (size_t b = 0; b < n; b += 16384) {
            tasks.push_back({w.data(), g.data(), m.data(), rule.kind == UpdateRule::Kind::adam ? v.data() : nullptr, b,
                             std::min(n, b + 16384)});
          }
          std::vector<double> sq(tasks.size());
          be->update(rule, tasks, sq.data());
          for (size_t i = 0; i < n; ++i) {
            if (rule.kind == UpdateRule::Kind::sgd) {
              elem::sgd(rule.lr, rule.weight_decay, rule.momentum, rw.data(), g.data(), rm.data(), i);
            } else {
              elem::adam(rule.weight_decay, rule.beta1, rule.beta2, rule.eps, rule.bias_correction2_sqrt, rule.step_size,
                         rw.data(), g.data(), rm.data(), rv.data(), i);
            }
          }
          CHECK(same_bits(w, rw));
          CHECK(same_bits(m, rm));
          CHECK(same_bits(v, rv));
          for (size_t t = 0; t < tasks.size(); ++t) {
            double lanes[8];
            for (int j = 0; j < 8; ++j) {
              lanes[j] = elem::square_lane(rw.data() + tasks[t].begin, tasks[t].end - tasks[t].begin, j);
            }
            CHECK(same_bits(sq[t], elem::add_lanes(lanes)));
            CHECK(same_bits(sq[t], sum_squares_8lane(rw.data() + tasks[t].begin, tasks[t].end - tasks[t].begin)));
          }
        }
      }
    }
  }
  gemm_force_kernel("");
}

TEST_CASE("The CPU backend's memory is host memory: buffers read in place, copies only where asked") {
  auto be = make_cpu_backend(nullptr);
  REQUIRE(be->host_memory());
  Buffer<float> b(*be, 37);
  b.zero();
  for (size_t i = 0; i < b.size(); ++i) {
    REQUIRE(b.data()[i] == 0.0f);
    REQUIRE(!std::signbit(b.data()[i])); // +0, as a fresh gradient must be
  }
  std::vector<float> host(37);
  for (size_t i = 0; i < host.size(); ++i) {
    host[i] = static_cast<float>(i) * 0.5f - 3.0f;
  }
  Buffer<float> staging;
  // No copy on the CPU: the host pointer itself goes to the kernels, and comes back.
  CHECK(to_backend(*be, host.data(), host.size(), staging) == host.data());
  CHECK(staging.size() == 0);
  std::vector<float> back;
  CHECK(to_host(*be, static_cast<const float*>(b.data()), b.size(), back) == b.data());
  CHECK(back.empty());
  be->upload(b.data(), host.data(), b.bytes());
  std::vector<float> out(37);
  be->download(out.data(), b.data(), b.bytes());
  CHECK(out == host);
  CHECK(read_one(*be, static_cast<const float*>(b.data() + 5)) == host[5]);
  Buffer<float> moved = std::move(b);
  CHECK(b.data() == nullptr);
  CHECK(moved.size() == 37);
}
