# Thin layer over CMake: installs missing Debian packages, builds, tests, runs the demo.
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps deps-test build test demo bench clean

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

demo: build
	@bash tools/demo.sh $(BUILD)/reprun

clean:
	rm -rf $(BUILD) build-*
