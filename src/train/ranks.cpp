// The rank chain: see include/reprun/train/ranks.hpp. Every float addition here happens in the
// backend (or in add_row_losses) in the single-process order; the exchange only moves the
// accumulators from rank to rank, and the finished ones to all.
#include "reprun/train/ranks.hpp"

#include "reprun/train/exchange.hpp"

#include <algorithm>

namespace reprun {

Slice rank_slice(long rows, int rank, int ranks) {
  return {rows * rank / ranks, rows * (rank + 1) / ranks};
}

long rank_slice_rows(long batch_size, int ranks) { return (batch_size + ranks - 1) / ranks; }

RankChain::RankChain(Exchange& ex, Mlp& model, MlpRunner& runner, long block_elems)
  : m_ex(ex), m_model(model), m_runner(runner) {
  // Last layer first, as the backward pass produces them.
  const auto& layers = model.layers();
  for (size_t l = layers.size(); l-- > 0;) {
    const long rows = std::max(1L, block_elems / std::max(1L, layers[l].out));
    for (long i0 = 0; i0 < layers[l].in; i0 += rows) {
      m_blocks.push_back({l, i0, std::min(layers[l].in, i0 + rows)});
    }
    m_blocks.push_back({l, -1, -1});
  }
  runner.keep_for_chains(true);
}

double RankChain::step(const StepContext& ctx, const float* xb, const int32_t* yb, long bsz, long features) {
  const int rank = m_ex.rank(), ranks = m_ex.size();
  const Slice sl = rank_slice(bsz, rank, ranks);
  const long m = sl.end - sl.begin;
  const float* x = xb + sl.begin * features;
  m_runner.begin_step(ctx);
  double unused = 0.0;
  // The parallel part: every rank's samples at once.
  m_runner.micro_batch(ctx, x, yb + sl.begin, m, sl.begin, unused);
  // The chains, block by block: continue the previous rank's accumulators, pass them on. Rank 0
  // starts from the zeros of begin_step, as one process does.
  auto& layers = m_model.layers();
  int tag = 0;
  for (const Block& b : m_blocks) {
    Dense& d = layers[b.layer];
    const bool bias = b.i0 < 0;
    float* acc = bias ? d.gb.data() : d.gw.data() + b.i0 * d.out;
    const size_t bytes = static_cast<size_t>(bias ? d.out : (b.i1 - b.i0) * d.out) * sizeof(float);
    if (rank > 0) {
      m_ex.recv(acc, bytes, rank - 1, tag);
    }
    if (bias) {
      m_runner.chain_bias_grad(b.layer, m);
    } else {
      m_runner.chain_weight_grad(b.layer, b.i0, b.i1, x, m);
    }
    if (rank + 1 < ranks) {
      m_ex.send(acc, bytes, rank + 1, tag);
    }
    ++tag;
  }
  // The loss sum: the same chain, in float64.
  double loss_sum = 0.0;
  if (rank > 0) {
    m_ex.recv(&loss_sum, sizeof loss_sum, rank - 1, tag);
  }
  m_runner.add_row_losses(m, loss_sum);
  if (rank + 1 < ranks) {
    m_ex.send(&loss_sum, sizeof loss_sum, rank + 1, tag);
  }
  m_ex.wait_sends();
  // The last rank holds the finished gradients: everyone gets its bytes.
  const int last = ranks - 1;
  for (auto& d : layers) {
    m_ex.broadcast(d.gw.data(), d.gw.size() * sizeof(float), last);
    m_ex.broadcast(d.gb.data(), d.gb.size() * sizeof(float), last);
  }
  m_ex.broadcast(&loss_sum, sizeof loss_sum, last);
  return loss_sum;
}

} // namespace reprun
