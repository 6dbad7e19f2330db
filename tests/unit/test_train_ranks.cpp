// Rank slices (contiguous, in rank order, covering every row once), and the rank chain run by
// threads in one process against one process's gradients.
#include "reprun/train/ranks.hpp"

#include "reprun/train/backend.hpp"
#include "reprun/train/exchange.hpp"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <doctest/doctest.h>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

using namespace reprun;

TEST_CASE("rank_slice cuts a batch into contiguous slices in rank order that cover every row once") {
  for (long rows : {1L, 2L, 7L, 28L, 32L, 128L}) {
    for (int ranks = 1; ranks <= rows && ranks <= 9; ++ranks) {
      long next = 0, smallest = rows, largest = 0;
      for (int r = 0; r < ranks; ++r) {
        const Slice s = rank_slice(rows, r, ranks);
        CHECK(s.begin == next);
        CHECK(s.end > s.begin);
        smallest = std::min(smallest, s.end - s.begin);
        largest = std::max(largest, s.end - s.begin);
        next = s.end;
      }
      CHECK(next == rows);
      CHECK(largest - smallest <= 1);
      CHECK(largest <= rank_slice_rows(rows, ranks));
    }
  }
}

TEST_CASE("rank_slice of one rank is the whole batch") {
  const Slice s = rank_slice(128, 0, 1);
  CHECK(s.begin == 0);
  CHECK(s.end == 128);
  CHECK(rank_slice_rows(128, 1) == 128);
  CHECK(rank_slice_rows(129, 4) == 33);
}

// The rank chain in one process: P threads, each a rank with its own model, exchanging through
// mailboxes (a send copies at once, a receive waits for its message). It runs where MPI does not
// (the sanitizer trees), and proves the chain itself: the gradients and loss of P ranks are those
// of one process, bit for bit.
namespace {

class ThreadExchange final : public Exchange {
public:
  struct Shared {
    std::mutex mutex;
    std::condition_variable cv;
    std::map<std::tuple<int, int, int>, std::deque<std::vector<char>>> boxes; // (from, to, tag)
  };
  ThreadExchange(Shared& sh, int rank, int size) : m_sh(sh), m_rank(rank), m_size(size) {}
  int rank() const override { return m_rank; }
  int size() const override { return m_size; }
  int post_recv(void* buf, size_t bytes, int from, int tag) override {
    m_pending.push_back({buf, bytes, from, tag, false});
    return static_cast<int>(m_pending.size() - 1);
  }
  int post_send(const void* buf, size_t bytes, int to, int tag) override {
    std::lock_guard<std::mutex> lock(m_sh.mutex);
    const char* p = static_cast<const char*>(buf);
    m_sh.boxes[{m_rank, to, tag}].emplace_back(p, p + bytes);
    m_sh.cv.notify_all();
    m_pending.push_back({nullptr, 0, to, tag, true});
    return static_cast<int>(m_pending.size() - 1);
  }
  void wait(int id) override {
    Pending& p = m_pending[static_cast<size_t>(id)];
    if (p.done) {
      return;
    }
    std::unique_lock<std::mutex> lock(m_sh.mutex);
    auto& box = m_sh.boxes[{p.peer, m_rank, p.tag}];
    m_sh.cv.wait(lock, [&] { return !box.empty(); });
    CHECK(box.front().size() == p.bytes);
    std::memcpy(p.buf, box.front().data(), std::min(p.bytes, box.front().size()));
    box.pop_front();
    p.done = true;
  }
  void wait_all() override {
    for (size_t i = 0; i < m_pending.size(); ++i) {
      wait(static_cast<int>(i));
    }
    m_pending.clear();
  }
  void broadcast(void* buf, size_t bytes, int root) override {
    const int tag = (1 << 30) + m_rounds++;
    if (m_rank == root) {
      for (int r = 0; r < m_size; ++r) {
        if (r != root) {
          post_send(buf, bytes, r, tag);
        }
      }
    } else {
      wait(post_recv(buf, bytes, root, tag));
    }
  }

  void barrier() override {
    const int tag = (1 << 30) + m_rounds++;
    int token = 0;
    if (m_rank == 0) {
      for (int r = 1; r < m_size; ++r) {
        wait(post_recv(&token, sizeof token, r, tag));
      }
    } else {
      post_send(&token, sizeof token, 0, tag);
    }
    broadcast(&token, sizeof token, 0);
  }

private:
  struct Pending {
    void* buf;
    size_t bytes;
    int peer, tag;
    bool done;
  };
  Shared& m_sh;
  int m_rank, m_size, m_rounds = 0;
  std::vector<Pending> m_pending;
};

struct Grads {
  std::vector<std::vector<float>> gw, gb;
  double loss_sum = 0.0;
};

Grads grads_of(const Mlp& m, double loss_sum) {
  Grads g;
  for (const auto& d : m.layers()) {
    g.gw.emplace_back(d.gw.data(), d.gw.data() + d.gw.size()); // CPU backend: host memory
    g.gb.emplace_back(d.gb.data(), d.gb.data() + d.gb.size());
  }
  g.loss_sum = loss_sum;
  return g;
}

bool same_bits(const Grads& a, const Grads& b) {
  bool same = std::memcmp(&a.loss_sum, &b.loss_sum, sizeof(double)) == 0 && a.gw.size() == b.gw.size();
  for (size_t l = 0; same && l < a.gw.size(); ++l) {
    same = a.gw[l].size() == b.gw[l].size() && a.gb[l].size() == b.gb[l].size() &&
           std::memcmp(a.gw[l].data(), b.gw[l].data(), a.gw[l].size() * sizeof(float)) == 0 &&
           std::memcmp(a.gb[l].data(), b.gb[l].data(), a.gb[l].size() * sizeof(float)) == 0;
  }
  return same;
}

} // namespace

TEST_CASE("The rank chain over 2, 3 and 5 ranks gives one process's gradients and loss sum, bit for bit") {
  ModelConfig mc;
  mc.hidden = {24, 16};
  mc.dropout = 0.25;
  const long F = 13, C = 4, B = 11;
  std::vector<float> x(static_cast<size_t>(B * F));
  std::vector<int32_t> y(static_cast<size_t>(B));
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 2.0);
  }
  for (long r = 0; r < B; ++r) {
    y[static_cast<size_t>(r)] = static_cast<int32_t>((r * 7) % C);
  }
  StepContext ctx;
  ctx.seed = 9;
  ctx.step = 3;
  ctx.batch_size = B;
  auto be = make_cpu_backend(nullptr);
  Mlp one(mc, F, C, *be);
  one.init(4);
  MlpRunner runner(one, mc, B, *be);
  runner.begin_step(ctx);
  double loss_sum = 0.0;
  runner.micro_batch(ctx, x.data(), y.data(), 4, 0, &loss_sum); // an accumulation split, 4 + 7
  runner.micro_batch(ctx, x.data() + 4 * F, y.data() + 4, B - 4, 4, &loss_sum);
  const Grads want = grads_of(one, loss_sum);

  for (int P : {2, 3, 5}) {
    for (long block : {1L, 7L, 65536L}) { // weight rows one by one, a few at a time, whole layers
      ThreadExchange::Shared shared;
      std::vector<Grads> got(static_cast<size_t>(P));
      std::vector<std::thread> ranks;
      for (int r = 0; r < P; ++r) {
        ranks.emplace_back([&, r] {
          ThreadExchange ex(shared, r, P);
          auto rb = make_cpu_backend(nullptr);
          Mlp m(mc, F, C, *rb);
          m.init(4);
          MlpRunner rr(m, mc, rank_slice_rows(B, P), *rb);
          RankChain chain(ex, m, rr, block);
          const double ls = chain.step(ctx, x.data(), y.data(), B, F);
          got[static_cast<size_t>(r)] = grads_of(m, ls);
        });
      }
      for (auto& t : ranks) {
        t.join();
      }
      for (int r = 0; r < P; ++r) {
        INFO("ranks " << P << ", block " << block << ", rank " << r);
        CHECK(same_bits(got[static_cast<size_t>(r)], want));
      }
    }
  }
}
