// Env::fromVars for the GPU backend's variables: defaults, parsing, and errors naming the variable.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "core/env.hpp"
#include "expect_error.hpp"

namespace axon {
namespace {

using test::contains;
using test::errorMessageOf;

constexpr std::size_t kMiB = 1024 * 1024;
constexpr std::size_t kGiB = 1024 * kMiB;

std::string envError(const std::string& name, const std::string& value) {
  return errorMessageOf([&] { Env::fromVars({{name, value}}); }, ErrorCode::InvalidArgument);
}

TEST(EnvGpu, Defaults) {
  Env env = Env::fromVars({});
  EXPECT_EQ(env.backend, Backend::Auto);
  EXPECT_EQ(env.device, -1);
  EXPECT_TRUE(env.p2p);
  EXPECT_EQ(env.gpuHeapMax, 64 * kGiB);
  EXPECT_EQ(env.gpuHeapChunk, 64 * kMiB);
  EXPECT_EQ(env.stageChunk, 1 * kMiB);
}

TEST(EnvGpu, ParsesEachVariable) {
  Env env = Env::fromVars({{"AXON_BACKEND", "host"},
                           {"AXON_DEVICE", "3"},
                           {"AXON_P2P", "0"},
                           {"AXON_GPU_HEAP_MAX", "4G"},
                           {"AXON_GPU_HEAP_CHUNK", "2M"},
                           {"AXON_STAGE_CHUNK", "256K"}});
  EXPECT_EQ(env.backend, Backend::Host);
  EXPECT_EQ(env.device, 3);
  EXPECT_FALSE(env.p2p);
  EXPECT_EQ(env.gpuHeapMax, 4 * kGiB);
  EXPECT_EQ(env.gpuHeapChunk, 2 * kMiB);
  EXPECT_EQ(env.stageChunk, 256 * 1024u);
  EXPECT_EQ(Env::fromVars({{"AXON_BACKEND", "gpu"}}).backend, Backend::Gpu);
  EXPECT_EQ(Env::fromVars({{"AXON_BACKEND", "auto"}}).backend, Backend::Auto);
  for (std::string on : {"1", "on", "yes", "true"}) EXPECT_TRUE(Env::fromVars({{"AXON_P2P", on}}).p2p) << on;
  for (std::string off : {"0", "off", "no", "false"}) EXPECT_FALSE(Env::fromVars({{"AXON_P2P", off}}).p2p) << off;
}

TEST(EnvGpu, BadValuesNameTheVariable) {
  EXPECT_TRUE(contains(envError("AXON_BACKEND", "cuda"), "AXON_BACKEND='cuda' is not one of auto, host, gpu"));
  for (std::string bad : {"-1", "x", "1.5", "99999"}) {
    EXPECT_TRUE(contains(envError("AXON_DEVICE", bad), "AXON_DEVICE='" + bad + "'")) << bad;
  }
  EXPECT_TRUE(contains(envError("AXON_P2P", "maybe"), "AXON_P2P='maybe' is not 0 or 1"));
  EXPECT_TRUE(contains(envError("AXON_GPU_HEAP_MAX", "lots"), "AXON_GPU_HEAP_MAX='lots'"));
  EXPECT_TRUE(contains(envError("AXON_GPU_HEAP_CHUNK", "0"), "AXON_GPU_HEAP_CHUNK='0'"));
  EXPECT_TRUE(contains(envError("AXON_STAGE_CHUNK", "-4K"), "AXON_STAGE_CHUNK='-4K'"));
}

}  // namespace
}  // namespace axon
