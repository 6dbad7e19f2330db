// reprun's entry point: everything else lives in the reprun_core library.
#include "cli/cli.hpp"

#include "reprun/train/exchange.hpp"

int main(int argc, char** argv) {
  const int code = reprun::cli::run_main(argc, argv);
  // A rank of an MPI run ends MPI last: MPI_Finalize when the ranks ended together (complete,
  // non-finite loss, interrupted), MPI_Abort on an error, so that no other rank waits for this one.
  reprun::mpi_finish(code == 0 || code == 1 || code == 130, code);
  return code;
}
