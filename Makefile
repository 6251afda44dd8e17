# `make test` and `make demo` do all set-up on a fresh machine: a virtual environment in .venv,
# packages from PyPI, the build (one CMake tree in build/, shared by pip and ctest), then run.
PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
AXON   := $(VENV)/bin/axon
JOBS   ?= $(shell nproc)
BUILD_DEPS := "scikit-build-core>=0.10" "nanobind>=2.0" "numpy>=1.22" "pytest>=7" "cmake>=3.24" "ninja>=1.10"
CMAKE_ARGS ?=

.PHONY: all venv build test unit-test mp-test py-test demo bench clean

all: build

$(VENV)/.ready: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet $(BUILD_DEPS)
	touch $@

venv: $(VENV)/.ready

# pip builds the library, the extension, the tests and the benchmarks in build/ and installs the
# package (with the `axon` command) into .venv.
build: $(VENV)/.ready
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(VPY) -m pip install --quiet --no-build-isolation --no-deps \
	  -Ccmake.define.AXON_BUILD_TESTS=ON $(foreach a,$(CMAKE_ARGS),-Ccmake.define.$(a)) .

unit-test: build
	cd build && ../$(VENV)/bin/ctest --output-on-failure -L unit

mp-test: build
	cd build && ../$(VENV)/bin/ctest --output-on-failure -L mp

py-test: build
	$(VPY) -m pytest -q tests/python

test: build
	cd build && ../$(VENV)/bin/ctest --output-on-failure -j $(JOBS)
	$(VPY) -m pytest -q tests/python

demo: build
	$(AXON) run -n 4 build/examples/ring_halo

bench: build
	mkdir -p bench-results
	$(AXON) run -n 2 build/bench/host_put_bench --json bench-results/host_put.json

clean:
	rm -rf build $(VENV) bench-results
