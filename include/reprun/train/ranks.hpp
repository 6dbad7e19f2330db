// Data-parallel training over MPI ranks with the single-process bits (docs/scaling.md). Each
// batch is cut into one contiguous slice per rank; each rank does the per-sample work of its own
// slice (forward, backward deltas, dropout, sample losses), then every weight-gradient element's
// one fused multiply-add chain in sample order is passed along the ranks: rank 0 runs it over its
// samples and sends the accumulators to rank 1, which continues it over its own, and so on, block
// by block (pipelined); the last rank sends the finished gradients and loss sum to every rank.
#pragma once

#include "reprun/train/model.hpp"

#include <cstdint>
#include <vector>

namespace reprun {

class Exchange;

// Rows [begin, end) of a batch of `rows` that rank `rank` of `ranks` holds: contiguous, in rank
// order, sizes differing by at most one.
struct Slice {
  long begin = 0;
  long end = 0;
};
Slice rank_slice(long rows, int rank, int ranks);

// The most rows any rank holds of a batch of `batch_size` (the runner's max_rows).
long rank_slice_rows(long batch_size, int ranks);

class RankChain {
public:
  // `block_elems`: gradient elements per message of the chain (a layer's weight rows are cut into
  // blocks of about that many; each bias is one block).
  RankChain(Exchange& ex, Mlp& model, MlpRunner& runner, long block_elems = 65536);

  // One step's gradients (in the model's gw and gb) and loss sum, on every rank, bit for bit those
  // of one process. xb, yb: the step's whole batch (bsz rows of `features`); ctx as for
  // micro_batch. Calls the runner's begin_step. `stop`: rank 0's request to stop after this step
  // (the other ranks' is ignored); it travels with the loss sum, and stop_after() is then rank
  // 0's answer on every rank, so that all stop after the same step without a message of its own.
  double step(const StepContext& ctx, const float* xb, const int32_t* yb, long bsz, long features,
              bool stop = false);
  bool stop_after() const { return m_tail.stop != 0.0; }

  // The messages of one step without its arithmetic, in the same order (make bench: the exchange's
  // own cost). Every rank calls it together.
  void exchange_only();

private:
  // What follows the gradient blocks along the chain and back: the loss sum (a float64 chain
  // like the gradients') and rank 0's stop request.
  struct Tail {
    double loss = 0.0;
    double stop = 0.0;
  };
  void post_receives();
  double pass(const float* x, long m, bool compute, bool stop); // the chains and the return
  struct Block {
    size_t layer;
    long i0, i1; // weight rows [i0, i1); i0 == i1 == -1: the bias
  };
  struct Span {
    float* acc; // the block's accumulators in the model's gradient
    size_t bytes;
  };
  Span span_of(const Block& b);

  Exchange& m_ex;
  Mlp& m_model;
  MlpRunner& m_runner;
  std::vector<Block> m_blocks;
  std::vector<int> m_recv_ids; // per block, then the loss: the posted receives of this step
  std::vector<int> m_send_ids; // per block: its posted send to the next rank (-1: none)
  Tail m_tail_in; // received from the previous rank
  Tail m_out;     // this rank's continuation of it, sent to the next rank (the last: to all)
  Tail m_tail;    // the finished one: the last rank's m_out
};

} // namespace reprun
