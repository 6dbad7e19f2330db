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

double RankChain::step(const StepContext& ctx, const float* xb, const int32_t* yb, long bsz, long features,
                       bool stop) {
  const int rank = m_ex.rank(), ranks = m_ex.size();
  const Slice sl = rank_slice(bsz, rank, ranks);
  const long m = sl.end - sl.begin;
  const float* x = xb + sl.begin * features;
  m_runner.begin_step(ctx);
  post_receives();
  double unused = 0.0;
  // The parallel part: every rank's samples at once.
  m_runner.micro_batch(ctx, x, yb + sl.begin, m, sl.begin, &unused);
  return pass(x, m, true, stop);
}

void RankChain::exchange_only() {
  post_receives();
  pass(nullptr, 0, false, false);
}

// Every block's receive is posted before this rank computes, so the previous rank's accumulators
// land while it does (the pipeline), and a wait finds them there.
void RankChain::post_receives() {
  const int rank = m_ex.rank();
  m_recv_ids.clear();
  if (rank > 0) {
    int tag = 0;
    for (const Block& b : m_blocks) {
      const Span sp = span_of(b);
      m_recv_ids.push_back(m_ex.post_recv(sp.acc, sp.bytes, rank - 1, tag++));
    }
    m_recv_ids.push_back(m_ex.post_recv(&m_tail_in, sizeof m_tail_in, rank - 1, tag));
  }
}

double RankChain::pass(const float* x, long m, bool compute, bool stop) {
  const int rank = m_ex.rank(), ranks = m_ex.size(), last = ranks - 1;
  const size_t nb = m_blocks.size();
  // The finished blocks reach every rank from the last rank, block by block as it finishes them,
  // so that this overlaps the chains still running. On the other ranks a finished block lands in
  // the memory their send of that block reads: its receive is posted once that send is complete,
  // one block later. (Tag nb + 1 + b: the finished block b.)
  m_send_ids.assign(nb, -1);
  size_t shared = 0; // blocks whose return is posted
  auto share_up_to = [&](size_t end) {
    for (; shared < end; ++shared) {
      const Span sp = span_of(m_blocks[shared]);
      const int tag = static_cast<int>(nb + 1 + shared);
      if (rank == last) {
        for (int r = 0; r < last; ++r) {
          m_ex.post_send(sp.acc, sp.bytes, r, tag);
        }
      } else {
        m_ex.wait(m_send_ids[shared]);
        m_ex.post_recv(sp.acc, sp.bytes, last, tag);
      }
    }
  };
  // The chains, block by block: continue the previous rank's accumulators, pass them on. Rank 0
  // starts from the zeros of begin_step, as one process does.
  for (size_t b = 0; b < nb; ++b) {
    const Block& blk = m_blocks[b];
    const Span sp = span_of(blk);
    if (rank > 0) {
      m_ex.wait(m_recv_ids[b]);
    }
    if (compute && blk.i0 < 0) {
      m_runner.chain_bias_grad(blk.layer, m);
    } else if (compute) {
      m_runner.chain_weight_grad(blk.layer, blk.i0, blk.i1, x, m);
    }
    if (rank < last) {
      m_send_ids[b] = m_ex.post_send(sp.acc, sp.bytes, rank + 1, static_cast<int>(b));
    }
    share_up_to(rank == last ? b + 1 : b);
  }
  // The loss sum, the same chain in float64, and rank 0's stop request; then, from the last rank,
  // the finished tail to all (tag 2 nb + 1), like the blocks.
  m_out = Tail{0.0, stop ? 1.0 : 0.0};
  if (rank > 0) {
    m_ex.wait(m_recv_ids[nb]);
    m_out = m_tail_in;
  }
  m_runner.add_row_losses(m, m_out.loss);
  const int tail_tag = static_cast<int>(2 * nb + 1);
  if (rank < last) {
    m_ex.post_send(&m_out, sizeof m_out, rank + 1, static_cast<int>(nb));
    m_ex.post_recv(&m_tail, sizeof m_tail, last, tail_tag);
  } else {
    m_tail = m_out;
    for (int r = 0; r < last; ++r) {
      m_ex.post_send(&m_tail, sizeof m_tail, r, tail_tag);
    }
  }
  share_up_to(nb);
  m_ex.wait_all();
  return m_tail.loss;
}

RankChain::Span RankChain::span_of(const Block& b) {
  Dense& d = m_model.layers()[b.layer];
  if (b.i0 < 0) {
    return {d.gb.data(), static_cast<size_t>(d.out) * sizeof(float)};
  }
  return {d.gw.data() + b.i0 * d.out, static_cast<size_t>((b.i1 - b.i0) * d.out) * sizeof(float)};
}

} // namespace reprun
