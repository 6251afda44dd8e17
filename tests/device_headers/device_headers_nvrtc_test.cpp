// The device API headers under NVRTC, which has no system headers at all: every public and impl
// header compiles alone, and kernels calling every device function with every scope and atomic
// type (all_device_calls.cuh) compile to PTX and, through NVRTC's ptxas, to sm_90 machine code
// (which checks the inline PTX). No GPU is needed.
//
// Compiling all_device_calls.cuh is the cost of these tests: fully optimized, NVVM and ptxas take
// about 70 s on CI's 2 cores, against 3 s with --Ofast-compile=max (the front end takes 0.3 s). So
// every compile here optimizes little: what they check is that the headers compile, that ptxas
// accepts the inline PTX, and which instructions the PTX holds, and none of that needs the
// optimizer (the inline PTX is emitted as written). The optimized build of the same calls is
// nvcc_compile_check.cu, compiled by nvcc with the project.
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <string>
#include <vector>

namespace {

struct Compiled {
  bool ok = false;
  std::string log;
  std::string ptx;  // when compiled for a virtual architecture
  bool haveCubin = false;
};

Compiled compile(const std::string& source, std::vector<std::string> options) {
  Compiled out;
  nvrtcProgram prog = nullptr;
  nvrtcResult r = nvrtcCreateProgram(&prog, source.c_str(), "axon_device_check.cu", 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) {
    out.log = std::string("nvrtcCreateProgram: ") + nvrtcGetErrorString(r);
    return out;
  }
  options.push_back(std::string("-I") + AXON_DEVICE_INCLUDE_DIR);
  options.push_back(std::string("-I") + AXON_DEVICE_TEST_DIR);
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  r = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t logSize = 0;
  nvrtcGetProgramLogSize(prog, &logSize);
  out.log.assign(logSize, '\0');
  if (logSize > 0) nvrtcGetProgramLog(prog, out.log.data());
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  out.ok = r == NVRTC_SUCCESS;
  if (out.ok) {
    size_t ptxSize = 0;
    if (nvrtcGetPTXSize(prog, &ptxSize) == NVRTC_SUCCESS && ptxSize > 1) {
      out.ptx.assign(ptxSize, '\0');
      nvrtcGetPTX(prog, out.ptx.data());
    }
    size_t cubinSize = 0;
    out.haveCubin = nvrtcGetCUBINSize(prog, &cubinSize) == NVRTC_SUCCESS && cubinSize > 0;
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

const char* kAllCalls = "#include \"all_device_calls.cuh\"\n";

// How many kernels in the PTX are named `name`, or are instances of the template `name` (mangled:
// _Z<length><name>I<type>E...).
int kernelsNamed(const std::string& ptx, const std::string& name) {
  const std::string instance = "_Z" + std::to_string(name.size()) + name + "I";
  int count = 0;
  for (std::size_t at = ptx.find(".entry "); at != std::string::npos;
       at = ptx.find(".entry ", at + 1)) {
    const std::size_t begin = at + 7;
    const std::string entry = ptx.substr(begin, ptx.find('(', begin) - begin);
    if (entry == name || entry.compare(0, instance.size(), instance) == 0) ++count;
  }
  return count;
}

// Every kernel of all_device_calls.cuh is in the PTX.
void expectEveryKernel(const std::string& ptx) {
  for (const char* kernel : {"axonCheckThreadScope", "axonCheckWarpScope", "axonCheckBlockScope",
                             "axonCheckUnscoped", "axonCheckAtomics", "axonCheckCollBarrier",
                             "axonCheckCollBroadcast", "axonCheckCollAllgather",
                             "axonCheckCollAlltoall"}) {
    EXPECT_EQ(kernelsNamed(ptx, kernel), 1) << kernel;
  }
  // The reducing collectives: one kernel for each of the six element types.
  for (const char* kernel :
       {"axonCheckCollAllreduce", "axonCheckCollReduce", "axonCheckCollReduceScatter"}) {
    EXPECT_EQ(kernelsNamed(ptx, kernel), 6) << kernel;
  }
}

// With a real architecture NVRTC compiles to PTX, then runs ptxas on it, and keeps both: the PTX
// is the one compute_90 gives (the same text), and ptxas rejects inline PTX that the front end
// passes through unread (wrong operand types, an instruction the architecture lacks).
TEST(DeviceHeadersNvrtc, AllCallsCompileToPtxAndAssembleForSm90WithCxx17) {
  const Compiled c = compile(kAllCalls,
                             {"--gpu-architecture=sm_90", "-std=c++17", "--Ofast-compile=max"});
  ASSERT_TRUE(c.ok) << "NVRTC log:\n" << c.log;
  EXPECT_EQ(c.log.find("warning"), std::string::npos) << "NVRTC log:\n" << c.log;
  EXPECT_TRUE(c.haveCubin);
  // The memory-model instructions the implementation promises, as the PTX spells them (the
  // system fence is membar.sys, a synonym of fence.sc.sys, in the PTX of CUDA 12 and 13). The
  // inline PTX names its state space; the atomics come from CUDA's *_system intrinsics, which
  // the unoptimized compile leaves on generic addresses (atom.sys.*, not atom.global.sys.*).
  for (const char* instruction :
       {"ld.acquire.sys.global.u64", "st.release.sys.global.u64", "red.release.sys.global.add.u64",
        "ld.relaxed.sys.global.b32", "ld.relaxed.sys.global.b64", "st.relaxed.sys.global.b32",
        "st.relaxed.sys.global.b64", "fence.acquire.sys", "%globaltimer", "nanosleep",
        "atom.sys.add.u32", "atom.sys.add.u64", "atom.sys.cas.b64", "atom.sys.exch.b32",
        ".v4.u32", "bar.sync", "bar.warp.sync", "shfl.sync", "vprintf", "trap"}) {
    EXPECT_NE(c.ptx.find(instruction), std::string::npos) << "no " << instruction << " in the PTX";
  }
  EXPECT_TRUE(c.ptx.find("membar.sys") != std::string::npos ||
              c.ptx.find("fence.sc.sys") != std::string::npos)
      << "no system-scope fence in the PTX";
  expectEveryKernel(c.ptx);
}

// The options of the C++20 check: the front end is the same as in every other compile here (it
// instantiates every template the kernels use: WrongTypesFailWithTheirMessage runs under these
// options too), and NVVM still generates the code of every kernel, with little optimization, as
// in the sm_90 check.
const std::vector<std::string> kCxx20 = {"--gpu-architecture=compute_90", "-std=c++20",
                                         "--Ofast-compile=max"};

TEST(DeviceHeadersNvrtc, AllCallsCompileWithCxx20) {
  const Compiled c = compile(kAllCalls, kCxx20);
  ASSERT_TRUE(c.ok) << "NVRTC log:\n" << c.log;
  expectEveryKernel(c.ptx);
}

// Every header stands alone: included first and alone, it brings what it uses.
TEST(DeviceHeadersNvrtc, EachHeaderCompilesAlone) {
  for (const char* header :
       {"axon/device/device.hpp", "axon/device/types.hpp", "axon/device/onesided.hpp",
        "axon/device/impl/address.hpp", "axon/device/impl/atomic_impl.hpp",
        "axon/device/impl/barrier_impl.hpp", "axon/device/impl/copy.hpp",
        "axon/device/impl/diagnostics.hpp", "axon/device/impl/onesided_impl.hpp",
        "axon/device/impl/ptx.hpp", "axon/device/impl/scope.hpp", "axon/device/impl/wait.hpp",
        "axon/device/proxy_ring.hpp", "axon/device/impl/proxy_impl.hpp",
        "axon/device/impl/coll_proxy_impl.hpp"}) {
    const std::string source =
        std::string("#include \"") + header + "\"\nextern \"C\" __global__ void axonEmpty() {}\n";
    const Compiled c = compile(source, {"--gpu-architecture=compute_90", "-std=c++17"});
    EXPECT_TRUE(c.ok) << header << ": NVRTC log:\n" << c.log;
  }
}

// The static_asserts that guard the templates say what is wrong.
TEST(DeviceHeadersNvrtc, WrongTypesFailWithTheirMessage) {
  struct Case {
    const char* body;
    const char* message;
  };
  for (const Case& k : {
           Case{"float* f = nullptr; axon::device::atomicFetchAdd(ctx, f, 1.0f, 0);",
                "axon device atomics take int, unsigned int"},
           Case{"struct Grid {}; axon::device::barrierAll<Grid>(ctx);",
                "axon::device scope must be Thread, Warp or Block"},
       }) {
    const std::string source = std::string("#include \"axon/device/device.hpp\"\n") +
                               "extern \"C\" __global__ void axonBad(axon::device::Context ctx) { " +
                               k.body + " }\n";
    for (const std::vector<std::string>& options :
         {std::vector<std::string>{"--gpu-architecture=compute_90", "-std=c++17"}, kCxx20}) {
      const Compiled c = compile(source, options);
      EXPECT_FALSE(c.ok) << k.body << " (" << options[1] << ")";
      EXPECT_NE(c.log.find(k.message), std::string::npos)
          << k.body << " (" << options[1] << "): NVRTC log:\n" << c.log;
    }
  }
}

}  // namespace
