// reprun's entry point: everything else lives in the reprun_core library.
#include "cli/cli.hpp"

int main(int argc, char** argv) { return reprun::cli::run_main(argc, argv); }
