// The MLP against an independent float64 reference written here: the reference's gradients are
// checked by finite differences, then reprun's float32 gradients and a few SGD steps against it.
#include "reprun/train/model.hpp"
#include "reprun/train/backend.hpp"
#include "reprun/train/optimizer.hpp"
#include "reprun/train/rng.hpp"
#include "reprun/core/threadpool.hpp"

#include <cmath>
#include <cstring>
#include <doctest/doctest.h>
#include <vector>

using namespace reprun;

namespace {

struct Ref {
  std::vector<long> widths; // features, hidden..., classes
  bool tanh_act = false;
  std::vector<std::vector<double>> w, b; // w[l] (in, out)

  // Mean cross-entropy over the batch; fills gradients when gw/gb are given.
  double loss(const std::vector<double>& x, const std::vector<int>& y, long m,
              std::vector<std::vector<double>>* gw = nullptr, std::vector<std::vector<double>>* gb = nullptr) const {
    const size_t L = w.size();
    std::vector<std::vector<double>> a(L + 1), z(L);
    a[0] = x;
    for (size_t l = 0; l < L; ++l) {
      long in = widths[l], out = widths[l + 1];
      z[l].assign(static_cast<size_t>(m * out), 0.0);
      for (long r = 0; r < m; ++r) {
        for (long o = 0; o < out; ++o) {
          double s = b[l][static_cast<size_t>(o)];
          for (long i = 0; i < in; ++i) {
            s += a[l][static_cast<size_t>(r * in + i)] * w[l][static_cast<size_t>(i * out + o)];
          }
          z[l][static_cast<size_t>(r * out + o)] = s;
        }
      }
      a[l + 1] = z[l];
      if (l + 1 < L) {
        for (auto& v : a[l + 1]) {
          v = tanh_act ? std::tanh(v) : std::max(0.0, v);
        }
      }
    }
    long C = widths.back();
    double total = 0.0;
    std::vector<double> g(static_cast<size_t>(m * C));
    for (long r = 0; r < m; ++r) {
      double mx = -1e300, s = 0.0;
      for (long j = 0; j < C; ++j) {
        mx = std::max(mx, z[L - 1][static_cast<size_t>(r * C + j)]);
      }
      for (long j = 0; j < C; ++j) {
        s += std::exp(z[L - 1][static_cast<size_t>(r * C + j)] - mx);
      }
      total += std::log(s) - (z[L - 1][static_cast<size_t>(r * C + y[static_cast<size_t>(r)])] - mx);
      for (long j = 0; j < C; ++j) {
        double p = std::exp(z[L - 1][static_cast<size_t>(r * C + j)] - mx) / s;
        g[static_cast<size_t>(r * C + j)] = (p - (j == y[static_cast<size_t>(r)] ? 1.0 : 0.0)) / static_cast<double>(m);
      }
    }
    if (gw) {
      gw->assign(L, {});
      gb->assign(L, {});
      for (size_t l = L; l-- > 0;) {
        long in = widths[l], out = widths[l + 1];
        (*gw)[l].assign(static_cast<size_t>(in * out), 0.0);
        (*gb)[l].assign(static_cast<size_t>(out), 0.0);
        for (long r = 0; r < m; ++r) {
          for (long o = 0; o < out; ++o) {
            double go = g[static_cast<size_t>(r * out + o)];
            (*gb)[l][static_cast<size_t>(o)] += go;
            for (long i = 0; i < in; ++i) {
              (*gw)[l][static_cast<size_t>(i * out + o)] += a[l][static_cast<size_t>(r * in + i)] * go;
            }
          }
        }
        if (l == 0) {
          break;
        }
        std::vector<double> gin(static_cast<size_t>(m * in), 0.0);
        for (long r = 0; r < m; ++r) {
          for (long i = 0; i < in; ++i) {
            double s = 0.0;
            for (long o = 0; o < out; ++o) {
              s += g[static_cast<size_t>(r * out + o)] * w[l][static_cast<size_t>(i * out + o)];
            }
            double zz = z[l - 1][static_cast<size_t>(r * in + i)];
            double d = tanh_act ? 1.0 - std::tanh(zz) * std::tanh(zz) : (zz > 0 ? 1.0 : 0.0);
            gin[static_cast<size_t>(r * in + i)] = s * d;
          }
        }
        g = gin;
      }
    }
    return total / static_cast<double>(m);
  }
};

struct Fixture {
  long m = 12, F = 7, C = 3;
  std::vector<float> x;
  std::vector<int32_t> y;
  std::vector<double> xd;
  std::vector<int> yd;
  Fixture() {
    for (long i = 0; i < m * F; ++i) {
      x.push_back(2.0f * to_unit_float(draw(5, Stream::data_noise, static_cast<uint32_t>(i))[0]) - 1.0f);
      xd.push_back(x.back());
    }
    for (long r = 0; r < m; ++r) {
      y.push_back(static_cast<int32_t>(r % C));
      yd.push_back(static_cast<int>(r % C));
    }
  }
};

// The backend whose memory the models of these tests live in: the CPU's, host memory, which any
// CPU backend of a test (whatever its thread count) computes on in place.
Backend& host_backend() {
  static const auto be = make_cpu_backend(nullptr);
  return *be;
}

Ref reference_of(const Mlp& model, bool tanh_act) {
  Ref ref;
  ref.tanh_act = tanh_act;
  ref.widths.push_back(model.features());
  for (const auto& d : model.layers()) {
    ref.widths.push_back(d.out);
    ref.w.emplace_back(d.w.data(), d.w.data() + d.w.size());
    ref.b.emplace_back(d.b.data(), d.b.data() + d.b.size());
  }
  return ref;
}

} // namespace

TEST_CASE("The float64 reference's gradients agree with finite differences") {
  for (const char* act : {"relu", "tanh"}) {
    Fixture fx;
    ModelConfig mc;
    mc.hidden = {6, 5};
    mc.activation = act;
    Mlp model(mc, fx.F, fx.C, host_backend());
    model.init(3);
    Ref ref = reference_of(model, std::string(act) == "tanh");
    for (auto& b : ref.b) {
      for (auto& v : b) {
        v = 0.05; // non-zero biases exercise the bias path
      }
    }
    std::vector<std::vector<double>> gw, gb;
    ref.loss(fx.xd, fx.yd, fx.m, &gw, &gb);
    const double h = 1e-6;
    for (size_t l = 0; l < ref.w.size(); ++l) {
      for (size_t i = 0; i < ref.w[l].size(); i += 3) {
        Ref p = ref, q = ref;
        p.w[l][i] += h;
        q.w[l][i] -= h;
        double fd = (p.loss(fx.xd, fx.yd, fx.m) - q.loss(fx.xd, fx.yd, fx.m)) / (2 * h);
        REQUIRE(std::fabs(fd - gw[l][i]) <= 1e-6 + 1e-5 * std::fabs(fd));
      }
      for (size_t i = 0; i < ref.b[l].size(); ++i) {
        Ref p = ref, q = ref;
        p.b[l][i] += h;
        q.b[l][i] -= h;
        double fd = (p.loss(fx.xd, fx.yd, fx.m) - q.loss(fx.xd, fx.yd, fx.m)) / (2 * h);
        REQUIRE(std::fabs(fd - gb[l][i]) <= 1e-6 + 1e-5 * std::fabs(fd));
      }
    }
  }
}

TEST_CASE("reprun's layer gradients match the float64 reference") {
  for (const char* act : {"relu", "tanh"}) {
    Fixture fx;
    ModelConfig mc;
    mc.hidden = {6, 5};
    mc.activation = act;
    Mlp model(mc, fx.F, fx.C, host_backend());
    model.init(11);
    Ref ref = reference_of(model, std::string(act) == "tanh");
    std::vector<std::vector<double>> gw, gb;
    double ref_loss = ref.loss(fx.xd, fx.yd, fx.m, &gw, &gb);

    ThreadPool pool(2);
    auto backend = make_cpu_backend(&pool);
    MlpRunner runner(model, mc, fx.m, *backend);
    StepContext ctx;
    ctx.seed = 11;
    ctx.step = 1;
    ctx.batch_size = fx.m;
    runner.begin_step(ctx);
    double loss_sum = 0.0;
    runner.micro_batch(ctx, fx.x.data(), fx.y.data(), fx.m, 0, &loss_sum);
    CHECK(loss_sum / fx.m == doctest::Approx(ref_loss).epsilon(1e-5));
    for (size_t l = 0; l < model.layers().size(); ++l) {
      const Dense& d = model.layers()[l];
      for (size_t i = 0; i < d.gw.size(); ++i) {
        REQUIRE(std::fabs(d.gw.data()[i] - gw[l][i]) <= 1e-5 + 1e-4 * std::fabs(gw[l][i]));
      }
      for (size_t i = 0; i < d.gb.size(); ++i) {
        REQUIRE(std::fabs(d.gb.data()[i] - gb[l][i]) <= 1e-5 + 1e-4 * std::fabs(gb[l][i]));
      }
    }
  }
}

TEST_CASE("Five SGD steps of the whole MLP track the float64 reference") {
  Fixture fx;
  ModelConfig mc;
  mc.hidden = {8};
  Mlp model(mc, fx.F, fx.C, host_backend());
  model.init(21);
  Ref ref = reference_of(model, false);
  OptimizerConfig oc;
  oc.lr = 0.1;
  oc.momentum = 0.9;
  ThreadPool pool(1);
  auto backend = make_cpu_backend(&pool);
  Optimizer opt(oc, model.params(), *backend);
  MlpRunner runner(model, mc, fx.m, *backend);
  std::vector<std::vector<double>> vw(ref.w.size()), vb(ref.b.size());
  for (size_t l = 0; l < ref.w.size(); ++l) {
    vw[l].assign(ref.w[l].size(), 0.0);
    vb[l].assign(ref.b[l].size(), 0.0);
  }
  for (long step = 1; step <= 5; ++step) {
    StepContext ctx;
    ctx.step = step;
    ctx.batch_size = fx.m;
    runner.begin_step(ctx);
    double loss_sum = 0.0;
    runner.micro_batch(ctx, fx.x.data(), fx.y.data(), fx.m, 0, &loss_sum);
    opt.step(step);
    std::vector<std::vector<double>> gw, gb;
    double ref_loss = ref.loss(fx.xd, fx.yd, fx.m, &gw, &gb);
    CHECK(loss_sum / fx.m == doctest::Approx(ref_loss).epsilon(1e-4));
    for (size_t l = 0; l < ref.w.size(); ++l) {
      for (size_t i = 0; i < ref.w[l].size(); ++i) {
        vw[l][i] = 0.9 * vw[l][i] + gw[l][i];
        ref.w[l][i] -= 0.1 * vw[l][i];
      }
      for (size_t i = 0; i < ref.b[l].size(); ++i) {
        vb[l][i] = 0.9 * vb[l][i] + gb[l][i];
        ref.b[l][i] -= 0.1 * vb[l][i];
      }
    }
  }
  for (size_t l = 0; l < ref.w.size(); ++l) {
    for (size_t i = 0; i < ref.w[l].size(); ++i) {
      REQUIRE(std::fabs(model.layers()[l].w.data()[i] - ref.w[l][i]) <= 1e-4);
    }
  }
}

TEST_CASE("The optimizer's fused norm equals weight_norm of the updated weights, bit for bit") {
  for (const char* name : {"sgd", "adam"}) {
    ModelConfig mc;
    mc.hidden = {300}; // a 784x300 weight spans several norm chunks, with a ragged last one
    Mlp model(mc, 784, 10, host_backend());
    model.init(5);
    for (auto& d : model.layers()) {
      for (size_t i = 0; i < d.gw.size(); ++i) {
        d.gw.data()[i] = static_cast<float>(static_cast<int>(i % 17) - 8) * 1e-3f;
      }
    }
    OptimizerConfig oc;
    oc.name = name;
    ThreadPool pool(2);
    const auto backend = make_cpu_backend(&pool);
    Optimizer opt(oc, model.params(), *backend);
    opt.step(1, true);
    opt.fetch_norms();
    auto params = model.params();
    for (size_t i = 0; i < params.size(); ++i) {
      double a = opt.norm(i), b = weight_norm(params[i].data, params[i].size);
      CHECK(std::memcmp(&a, &b, sizeof(double)) == 0);
    }
  }
}

TEST_CASE("Evaluation gives the same loss bits and accuracy for every evaluation batch size") {
  // Odd widths and a row count that no batch size below divides: ragged last batches and GEMM
  // edge tiles everywhere. A per-batch partial loss sum would change the bits with the cut.
  const long F = 29, C = 5, m = 301;
  ModelConfig mc;
  mc.hidden = {37, 19};
  Mlp model(mc, F, C, host_backend());
  model.init(8);
  std::vector<float> x(static_cast<size_t>(m * F));
  std::vector<int32_t> y(static_cast<size_t>(m));
  for (size_t i = 0; i < x.size(); ++i) {
    Philox4 r = draw(3, Stream::data_noise, static_cast<uint32_t>(i));
    x[i] = 4.0f * to_unit_float(r[0]) - 2.0f;
  }
  for (size_t i = 0; i < y.size(); ++i) {
    y[i] = static_cast<int32_t>(i * 7 % static_cast<size_t>(C));
  }
  double want_loss = 0.0;
  long want_correct = 0;
  bool first = true;
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    auto backend = make_cpu_backend(&pool);
    MlpRunner runner(model, mc, m, *backend);
    for (long rows : {1L, 7L, 24L, 25L, 128L, 256L, 300L, 301L}) {
      CAPTURE(threads);
      CAPTURE(rows);
      double loss = 0.0;
      long correct = 0;
      runner.evaluate(x.data(), y.data(), m, rows, &loss, &correct);
      if (first) {
        want_loss = loss;
        want_correct = correct;
        first = false;
        CHECK(std::isfinite(loss));
        CHECK(loss > 0.0);
      }
      CHECK(std::memcmp(&loss, &want_loss, sizeof(double)) == 0);
      CHECK(correct == want_correct);
    }
  }
}
