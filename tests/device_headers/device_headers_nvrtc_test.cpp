// The device API headers under NVRTC, which has no system headers at all: every public and impl
// header compiles alone, and kernels calling every device function with every scope and atomic
// type (all_device_calls.cuh) compile to PTX and, through NVRTC's ptxas, to sm_90 machine code
// (which checks the inline PTX). No GPU is needed.
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

TEST(DeviceHeadersNvrtc, AllCallsCompileToPtxWithCxx17) {
  const Compiled c = compile(kAllCalls, {"--gpu-architecture=compute_90", "-std=c++17"});
  ASSERT_TRUE(c.ok) << "NVRTC log:\n" << c.log;
  EXPECT_EQ(c.log.find("warning"), std::string::npos) << "NVRTC log:\n" << c.log;
  // The memory-model instructions the implementation promises, as the PTX spells them (the
  // system fence is membar.sys, a synonym of fence.sc.sys, in the PTX of CUDA 12 and 13).
  for (const char* instruction :
       {"ld.acquire.sys.global.u64", "st.release.sys.global.u64", "red.release.sys.global.add.u64",
        "ld.relaxed.sys.global.b32", "ld.relaxed.sys.global.b64", "st.relaxed.sys.global.b32",
        "st.relaxed.sys.global.b64", "fence.acquire.sys", "%globaltimer", "nanosleep", "atom.global.sys.add.u32",
        "atom.global.sys.add.u64", "atom.global.sys.cas.b64", "atom.global.sys.exch.b32",
        ".v4.u32", "bar.sync", "bar.warp.sync", "shfl.sync", "vprintf", "trap"}) {
    EXPECT_NE(c.ptx.find(instruction), std::string::npos) << "no " << instruction << " in the PTX";
  }
  EXPECT_TRUE(c.ptx.find("membar.sys") != std::string::npos ||
              c.ptx.find("fence.sc.sys") != std::string::npos)
      << "no system-scope fence in the PTX";
  for (const char* kernel : {"axonCheckThreadScope", "axonCheckWarpScope", "axonCheckBlockScope",
                             "axonCheckUnscoped", "axonCheckAtomics"}) {
    EXPECT_NE(c.ptx.find(std::string(".entry ") + kernel), std::string::npos) << kernel;
  }
}

TEST(DeviceHeadersNvrtc, AllCallsCompileWithCxx20) {
  const Compiled c = compile(kAllCalls, {"--gpu-architecture=compute_90", "-std=c++20"});
  ASSERT_TRUE(c.ok) << "NVRTC log:\n" << c.log;
}

// A real architecture makes NVRTC run ptxas, which rejects inline PTX that the front end passes
// through unread (wrong operand types, an instruction the architecture lacks).
TEST(DeviceHeadersNvrtc, AllCallsAssembleForSm90) {
  const Compiled c = compile(kAllCalls, {"--gpu-architecture=sm_90", "-std=c++17"});
  ASSERT_TRUE(c.ok) << "NVRTC log:\n" << c.log;
  EXPECT_TRUE(c.haveCubin);
}

// Every header stands alone: included first and alone, it brings what it uses.
TEST(DeviceHeadersNvrtc, EachHeaderCompilesAlone) {
  for (const char* header :
       {"axon/device/device.hpp", "axon/device/types.hpp", "axon/device/onesided.hpp",
        "axon/device/impl/address.hpp", "axon/device/impl/atomic_impl.hpp",
        "axon/device/impl/barrier_impl.hpp", "axon/device/impl/copy.hpp",
        "axon/device/impl/diagnostics.hpp", "axon/device/impl/onesided_impl.hpp",
        "axon/device/impl/ptx.hpp", "axon/device/impl/scope.hpp", "axon/device/impl/wait.hpp"}) {
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
    const Compiled c = compile(source, {"--gpu-architecture=compute_90", "-std=c++17"});
    EXPECT_FALSE(c.ok) << k.body;
    EXPECT_NE(c.log.find(k.message), std::string::npos) << k.body << ": NVRTC log:\n" << c.log;
  }
}

}  // namespace
