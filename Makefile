# Thin layer over CMake: installs missing Debian packages, builds, tests, runs the demo.
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps deps-test deps-bench build test demo bench clean

all: build

deps:
	@bash tools/install-deps.sh build

deps-test:
	@bash tools/install-deps.sh test

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: deps-test build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

deps-bench:
	@bash tools/install-deps.sh bench

# Release build, then reprun and its peers side by side (not part of make test).
bench: deps-bench build
	@cmake --build $(BUILD) --target reprun_gemm_bench -j $(JOBS)
	@BUILD=$(BUILD) /usr/bin/python3 bench/run.py

demo: build
	@bash tools/demo.sh $(BUILD)/reprun

clean:
	rm -rf $(BUILD) build-*
