// `make bench`, MPI section: the exchange of one training step of the mnist-mlp model (784-256-
// 256-10, 268,650 gradient elements) over the ranks, against a plain MPI_Allreduce of the same
// bytes. Run under `mpirun -np P`; rank 0 prints one JSON line. The exchange is RankChain's own
// (exchange_only: the chain's messages and the return, without the arithmetic between them).
// A benchmark, not product code: it may include mpi.h for the Allreduce it compares with.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "reprun/train/backend.hpp"
#include "reprun/train/config.hpp"
#include "reprun/train/exchange.hpp"
#include "reprun/train/model.hpp"
#include "reprun/train/ranks.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace reprun;

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 300;
  Exchange* ex = mpi_world();
  if (!ex) {
    std::fprintf(stderr, "mpi_bench: run me under mpirun -np 2 (or more)\n");
    return 2;
  }
  ModelConfig mc;
  mc.hidden = {256, 256};
  auto backend = make_cpu_backend(nullptr);
  Mlp model(mc, 784, 10, *backend);
  model.init(1);
  MlpRunner runner(model, mc, 64, *backend);
  RankChain chain(*ex, model, runner, argc > 2 ? std::atol(argv[2]) : 65536);
  const long n = model.parameter_count();
  std::vector<float> buf(static_cast<size_t>(n), 1.0f);
  auto median_ms = [&](auto&& once) {
    std::vector<double> t;
    for (int i = 0; i < iters + 20; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = std::chrono::steady_clock::now();
      once();
      const auto t1 = std::chrono::steady_clock::now();
      if (i >= 20) {
        t.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  // Interleaved in rounds, so that a loaded machine slows both alike.
  std::vector<double> ex_ms, ar_ms;
  for (int round = 0; round < 3; ++round) {
    ex_ms.push_back(median_ms([&] { chain.exchange_only(); }));
    ar_ms.push_back(median_ms([&] {
      MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }));
  }
  std::sort(ex_ms.begin(), ex_ms.end());
  std::sort(ar_ms.begin(), ar_ms.end());
  if (ex->rank() == 0) {
    std::printf("{\"ranks\": %d, \"elements\": %ld, \"bytes\": %ld, \"exchange_ms\": %.4f, \"allreduce_ms\": %.4f, "
                "\"ratio\": %.3f}\n",
                ex->size(), n, n * 4, ex_ms[1], ar_ms[1], ex_ms[1] / ar_ms[1]);
  }
  mpi_finish(true, 0);
  return 0;
}
