# Thin layer over CMake: installs missing Debian packages, builds, tests, runs the demo.
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps deps-test deps-bench deps-fuzz build lint test test-gpu test-asan test-tsan fuzz fuzz-smoke demo bench clean
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = config steplog csv idx checkpoint

all: build

deps:
	@bash tools/install-deps.sh build

deps-test:
	@bash tools/install-deps.sh test

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The layering rule and the run-directory ownership rule (docs/ARCHITECTURE.md).
lint: deps-test
	@python3 tools/check-layers

test: deps-test build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Only the GPU tests (tests/gpu/, CTest label gpu): they skip, never pass, without a GPU.
test-gpu: deps-test build
	@cd $(BUILD) && ctest -L gpu --output-on-failure

deps-bench:
	@bash tools/install-deps.sh bench

# Release build, then reprun and its peers side by side (not part of make test).
bench: deps-bench build
	@cmake --build $(BUILD) --target reprun_gemm_bench -j $(JOBS)
	@for t in reprun_mpi_bench reprun_gemm_cuda_bench; do \
	  if cmake --build $(BUILD) --target help | grep -q "$$t"; then cmake --build $(BUILD) --target $$t -j $(JOBS); fi; \
	done
	@BUILD=$(BUILD) /usr/bin/python3 bench/run.py

# The suite under AddressSanitizer + UndefinedBehaviorSanitizer, and under ThreadSanitizer, less the
# tests labelled uninstrumented (CMakeLists.txt: their time goes to Python, PyTorch and chromium,
# which the sanitizers do not see; make test runs them). Both without MPI: Open MPI's own
# allocations trip LeakSanitizer and it is slow under ASan; the MPI tests skip there (exit 125),
# and the chain itself is covered in-process by the unit tests.
# -O1 in the sanitizer builds: the optimization level the sanitizers' authors recommend, and the
# instrumented build (CI's longest stage) compiled in 0.6 of the time of -O2 here.
SANITIZE_FLAGS = -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG"

test-asan: deps-test
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREPRUN_CUDA=OFF -DREPRUN_MPI=OFF \
	  -DREPRUN_SANITIZE=address,undefined $(SANITIZE_FLAGS) >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ctest -LE uninstrumented --output-on-failure -j $(JOBS)

test-tsan: deps-test
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREPRUN_CUDA=OFF -DREPRUN_MPI=OFF \
	  -DREPRUN_SANITIZE=thread $(SANITIZE_FLAGS) >/dev/null
	@cmake --build build-tsan -j $(JOBS)
	@cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest -LE uninstrumented --output-on-failure -j $(JOBS)

deps-fuzz:
	@bash tools/install-deps.sh fuzz

# libFuzzer targets, each run for FUZZ_SECONDS on the corpus in testdata/fuzz (new inputs go to
# build-fuzz/corpus, crashes to build-fuzz/crashes). fuzz-smoke is the short run CI does.
fuzz: deps-fuzz
	@cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DREPRUN_FUZZ=ON -DREPRUN_CUDA=OFF -DREPRUN_MPI=OFF >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	@set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus/$$t build-fuzz/crashes; \
	  echo "fuzz_$$t: $(FUZZ_SECONDS) s"; \
	  if ! build-fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=build-fuzz/crashes/$$t- build-fuzz/corpus/$$t testdata/fuzz/$$t >build-fuzz/fuzz_$$t.log 2>&1; then \
	    tail -n 40 build-fuzz/fuzz_$$t.log; echo "fuzz_$$t FAILED (log: build-fuzz/fuzz_$$t.log)"; exit 1; \
	  fi; \
	  grep -E "^(Done|stat::number_of_executed_units)" build-fuzz/fuzz_$$t.log | tail -n 1; \
	done

fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=6

demo: build
	@bash tools/demo.sh $(BUILD)/reprun

clean:
	rm -rf $(BUILD) build-*
