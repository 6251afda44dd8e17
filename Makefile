# `make test` and `make demo` do all set-up on a fresh machine: a virtual environment in .venv,
# packages from PyPI, the build (one CMake tree in build/, shared by pip and ctest), then run.
PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
AXON   := $(VENV)/bin/axon
JOBS   ?= $(shell nproc)
BUILD_DEPS := "scikit-build-core>=0.10" "nanobind>=2.0" "numpy>=1.22" "pytest>=7" "cmake>=3.24" "ninja>=1.10" \
              "nvidia-ml-py>=12" "rich>=13" "matplotlib>=3.5"
CMAKE_ARGS ?=
# Where CUDA builds (nvcc found), the NVSHMEM wheel too: its headers and device library let the
# build compile the NVSHMEM comparison peer of `axon bench --compare` (bench/nvshmem_peer.cu), so
# that CI compiles it. The 3.4 series is the one the GPU machines carry.
NVSHMEM_PKG := "nvidia-nvshmem-cu13>=3.4,<3.5"

.PHONY: all venv build test unit-test mp-test py-test demo bench clean gpu-venv gpu-build gpu-test

all: build

$(VENV)/.ready: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet $(BUILD_DEPS)
	if command -v nvcc >/dev/null 2>&1; then $(VPY) -m pip install --quiet $(NVSHMEM_PKG); fi
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

# GPU machines may have no package registry: the GPU targets build in a virtual environment that
# sees the system's packages (nanobind, scikit-build-core, numpy, pytest, torch, cupy) and
# installs nothing from the network. CUDA is required there (AXON_CUDA=ON).
GPU_VENV := .venv-gpu
GPU_VPY  := $(GPU_VENV)/bin/python

# A .pth file adds the site-packages of $(PYTHON) itself, which may be a virtual environment of
# its own (then --system-site-packages alone would not see its packages).
$(GPU_VENV)/.ready:
	$(PYTHON) -m venv --system-site-packages $(GPU_VENV)
	$(PYTHON) -c "import site; print('\n'.join(site.getsitepackages()))" > \
	  "$$($(GPU_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/axon-parent-env.pth"
	$(GPU_VENV)/bin/python -c "import scikit_build_core, nanobind, numpy, pytest" || \
	  { echo "gpu-build needs scikit-build-core, nanobind, numpy and pytest in $(PYTHON)"; exit 1; }
	touch $@

gpu-venv: $(GPU_VENV)/.ready

gpu-build: $(GPU_VENV)/.ready
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(GPU_VPY) -m pip install --quiet --no-build-isolation --no-deps \
	  -Ccmake.define.AXON_BUILD_TESTS=ON -Ccmake.define.AXON_CUDA=ON $(foreach a,$(CMAKE_ARGS),-Ccmake.define.$(a)) .

# Every GPU test (ctest label gpu, pytest marker gpu), then the whole host suite on the same build.
gpu-test: gpu-build
	cd build && ctest --output-on-failure -L gpu
	$(GPU_VPY) -m pytest -q -m gpu tests/python || test $$? -eq 5  # 5: none collected
	cd build && ctest --output-on-failure -j $(JOBS) -LE gpu
	$(GPU_VPY) -m pytest -q -m "not gpu" tests/python

clean:
	rm -rf build $(VENV) $(GPU_VENV) bench-results
