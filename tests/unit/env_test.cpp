// Env::fromVars: defaults when nothing is set, and the parsing of each AXON_* tuning variable.
// Bad values must fail at init with InvalidArgument naming the variable, not misbehave later.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <string>

#include "core/env.hpp"
#include "expect_error.hpp"

namespace axon {
namespace {

using test::contains;
using test::errorMessageOf;

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = kKiB * kKiB;
constexpr std::size_t kGiB = kMiB * kKiB;

Env envWith(const std::string& name, const std::string& value) {
  return Env::fromVars({{name, value}});
}

std::string envError(const std::string& name, const std::string& value) {
  return errorMessageOf([&] { Env::fromVars({{name, value}}); }, ErrorCode::InvalidArgument);
}

TEST(Env, Defaults) {
  Env env = Env::fromVars({});
  EXPECT_EQ(env.launch.source, "single");
  EXPECT_DOUBLE_EQ(env.timeoutSec, 300.0);
  EXPECT_EQ(env.heapMax, 8 * kGiB);
  EXPECT_EQ(env.heapChunk, 16 * kMiB);
  EXPECT_EQ(env.logLevel, 1);  // warn
}

TEST(Env, EmptyValuesKeepTheDefaults) {
  Env env = Env::fromVars(
      {{"AXON_TIMEOUT", ""}, {"AXON_HEAP_MAX", ""}, {"AXON_HEAP_CHUNK", ""}, {"AXON_LOG", ""}});
  EXPECT_DOUBLE_EQ(env.timeoutSec, 300.0);
  EXPECT_EQ(env.heapMax, 8 * kGiB);
  EXPECT_EQ(env.heapChunk, 16 * kMiB);
  EXPECT_EQ(env.logLevel, 1);
}

TEST(Env, LaunchVariablesReachTheLaunchInfo) {
  Env env = Env::fromVars({{"AXON_RANK", "1"}, {"AXON_WORLD_SIZE", "2"}, {"AXON_STORE_ADDR", "h:9"}});
  EXPECT_EQ(env.launch.rank, 1);
  EXPECT_EQ(env.launch.worldSize, 2);
  EXPECT_EQ(env.launch.storeAddr, "h:9");
}

// The PEs of this machine (axon run sets it; waits share the cores by it, core/wait.cpp).
TEST(Env, HostPesIsAWholeNumberOfPes) {
  EXPECT_EQ(Env::fromVars({}).hostPes, 0) << "unset: the node's PEs count";
  EXPECT_EQ(envWith("AXON_HOST_PES", "8").hostPes, 8);
  for (const char* bad : {"0", "-2", "four", "3.5", "99999999999"}) {
    EXPECT_TRUE(contains(envError("AXON_HOST_PES", bad), "AXON_HOST_PES")) << bad;
  }
}

TEST(EnvTimeout, AcceptsWholeAndFractionalSeconds) {
  EXPECT_DOUBLE_EQ(envWith("AXON_TIMEOUT", "30").timeoutSec, 30.0);
  EXPECT_DOUBLE_EQ(envWith("AXON_TIMEOUT", "2.5").timeoutSec, 2.5);
}

// Past about 9.2e9 s a deadline overflows the steady clock: a long timeout is cut to the maximum.
TEST(EnvTimeout, CutsLongTimeoutsToTheMaximum) {
  EXPECT_DOUBLE_EQ(envWith("AXON_TIMEOUT", "1e10").timeoutSec, kMaxTimeoutSec);
  EXPECT_DOUBLE_EQ(envWith("AXON_TIMEOUT", "inf").timeoutSec, kMaxTimeoutSec);
  EXPECT_DOUBLE_EQ(envWith("AXON_TIMEOUT", "1e8").timeoutSec, 1e8);
}

TEST(EnvTimeout, ClampTimeoutRefusesNanAndNegative) {
  EXPECT_DOUBLE_EQ(clampTimeout(1e300, "t"), kMaxTimeoutSec);
  EXPECT_DOUBLE_EQ(clampTimeout(2.5, "t"), 2.5);
  EXPECT_DOUBLE_EQ(clampTimeout(-1, "t", true), -1);
  for (double bad : {std::nan(""), -1.0}) {
    try {
      clampTimeout(bad, "the timeout of get");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_TRUE(contains(e.what(), "the timeout of get"));
    }
  }
  EXPECT_THROW(clampTimeout(std::nan(""), "t", true), Error);
}

TEST(EnvTimeout, RejectsNonPositiveAndMalformed) {
  for (std::string bad : {"0", "-1", "abc", "10s", "-inf", "nan"}) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(contains(envError("AXON_TIMEOUT", bad), "AXON_TIMEOUT='" + bad + "'"));
  }
}

TEST(EnvHeapMax, ParsesSuffixes) {
  EXPECT_EQ(envWith("AXON_HEAP_MAX", "64M").heapMax, 64 * kMiB);
  EXPECT_EQ(envWith("AXON_HEAP_MAX", "8G").heapMax, 8 * kGiB);
  EXPECT_EQ(envWith("AXON_HEAP_MAX", "1.5G").heapMax, 3 * kGiB / 2);
  EXPECT_EQ(envWith("AXON_HEAP_MAX", "65536").heapMax, std::size_t{65536});
  EXPECT_EQ(envWith("AXON_HEAP_MAX", "512K").heapMax, 512 * kKiB);
  EXPECT_EQ(envWith("AXON_HEAP_MAX", "1T").heapMax, 1024 * kGiB);
}

TEST(EnvHeapMax, SuffixesIgnoreCaseAndAnOptionalIB) {
  // "4g", "4GB" and "4GiB" all mean 4 * 2^30: the docs use binary units throughout.
  for (std::string text : {"4g", "4GB", "4GiB", "4gib"}) {
    EXPECT_EQ(envWith("AXON_HEAP_MAX", text).heapMax, 4 * kGiB) << text;
  }
}

TEST(EnvHeapMax, RejectsBadValuesNamingTheVariable) {
  for (std::string bad : {"abc", "-1", "0", "12Q", "M", "1e30", "inf"}) {
    SCOPED_TRACE(bad);
    std::string msg = envError("AXON_HEAP_MAX", bad);
    EXPECT_TRUE(contains(msg, "AXON_HEAP_MAX='" + bad + "'"));
  }
}

TEST(EnvP2p, EagerLimitAndUnexpectedBound) {
  Env env = Env::fromVars({});
  EXPECT_EQ(env.p2pEager, 8 * kKiB);
  EXPECT_EQ(env.p2pUnexpected, 64 * kMiB);
  EXPECT_EQ(envWith("AXON_P2P_EAGER", "1M").p2pEager, kMiB);
  EXPECT_EQ(envWith("AXON_P2P_EAGER", "256").p2pEager, std::size_t{256});
  EXPECT_TRUE(contains(envError("AXON_P2P_EAGER", "255"), "from 256 bytes to 1M"));
  EXPECT_TRUE(contains(envError("AXON_P2P_EAGER", "2M"), "AXON_P2P_EAGER='2M'"));
  EXPECT_EQ(envWith("AXON_P2P_UNEXPECTED", "0").p2pUnexpected, std::size_t{0});
  EXPECT_EQ(envWith("AXON_P2P_UNEXPECTED", "1G").p2pUnexpected, kGiB);
  EXPECT_TRUE(contains(envError("AXON_P2P_UNEXPECTED", "lots"), "AXON_P2P_UNEXPECTED='lots'"));
  EXPECT_TRUE(env.p2pPosted);
  EXPECT_FALSE(envWith("AXON_P2P_POSTED", "0").p2pPosted);
  EXPECT_TRUE(contains(envError("AXON_P2P_POSTED", "maybe"), "AXON_P2P_POSTED='maybe'"));
}

TEST(EnvSpace, AddressFileAndBatch) {
  Env env = Env::fromVars({});
  EXPECT_EQ(env.spaceAddr, "");
  EXPECT_EQ(env.spaceFile, "");
  EXPECT_EQ(env.spaceBatch, 64 * kKiB);
  EXPECT_EQ(envWith("AXON_SPACE_ADDR", "10.0.0.2:4711").spaceAddr, "10.0.0.2:4711");
  EXPECT_EQ(envWith("AXON_SPACE_FILE", "/tmp/space.json").spaceFile, "/tmp/space.json");
  EXPECT_EQ(envWith("AXON_SPACE_KEY", std::string(32, 'a')).spaceKey, std::string(32, 'a'));
  // A bad key is named, never echoed.
  EXPECT_TRUE(contains(envError("AXON_SPACE_KEY", "0123456789abcdef"), "AXON_SPACE_KEY: a key of 8 bytes is too short"));
  EXPECT_FALSE(contains(envError("AXON_SPACE_KEY", "0123456789abcdef"), "0123456789abcdef"));
  EXPECT_TRUE(contains(envError("AXON_SPACE_KEY", std::string(31, 'a') + "g"), "not one"));
  EXPECT_EQ(envWith("AXON_SPACE_BATCH", "0").spaceBatch, std::size_t{0});
  EXPECT_EQ(envWith("AXON_SPACE_BATCH", "1M").spaceBatch, kMiB);
  EXPECT_TRUE(contains(envError("AXON_SPACE_BATCH", "2M"), "at most 1M"));
  EXPECT_TRUE(contains(envError("AXON_SPACE_BATCH", "lots"), "AXON_SPACE_BATCH='lots'"));
}

TEST(EnvHeapChunk, UsesTheSameSizeSyntax) {
  EXPECT_EQ(envWith("AXON_HEAP_CHUNK", "2M").heapChunk, 2 * kMiB);
  EXPECT_EQ(envWith("AXON_HEAP_CHUNK", "4096").heapChunk, std::size_t{4096});
  EXPECT_TRUE(contains(envError("AXON_HEAP_CHUNK", "big"), "AXON_HEAP_CHUNK='big'"));
  EXPECT_TRUE(contains(envError("AXON_HEAP_CHUNK", "0"), "AXON_HEAP_CHUNK"));
}

// Exposes a library defect: parseByteSize checks that the *number* is positive, then truncates
// number * scale to whole bytes, so a positive value below one byte is accepted as a size of 0.
TEST(EnvHeapMax, SubByteValueIsNotAcceptedAsZero) {
  Env env;
  try {
    env = envWith("AXON_HEAP_MAX", "0.5");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    return;  // rejecting it is right
  }
  EXPECT_GT(env.heapMax, 0u) << "AXON_HEAP_MAX=0.5 was accepted as a heap cap of 0 bytes";
}

TEST(EnvLog, NamesAndNumbers) {
  const char* names[] = {"error", "warn", "info", "debug"};
  for (int level = 0; level < 4; ++level) {
    EXPECT_EQ(envWith("AXON_LOG", names[level]).logLevel, level) << names[level];
    EXPECT_EQ(envWith("AXON_LOG", std::to_string(level)).logLevel, level) << level;
  }
}

TEST(EnvLog, RejectsUnknownLevelNamingTheVariable) {
  for (std::string bad : {"verbose", "4", "-1"}) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(contains(envError("AXON_LOG", bad), "AXON_LOG='" + bad + "'"));
  }
}

TEST(EnvUcxAtomics, NamesTheThreeWays) {
  EXPECT_EQ(Env::fromVars({}).ucxAtomics, RemoteAtomics::Auto);
  EXPECT_EQ(envWith("AXON_UCX_ATOMICS", "auto").ucxAtomics, RemoteAtomics::Auto);
  EXPECT_EQ(envWith("AXON_UCX_ATOMICS", "am").ucxAtomics, RemoteAtomics::ActiveMessage);
  EXPECT_EQ(envWith("AXON_UCX_ATOMICS", "native").ucxAtomics, RemoteAtomics::Native);
  EXPECT_TRUE(contains(envError("AXON_UCX_ATOMICS", "hw"), "AXON_UCX_ATOMICS='hw' is not auto, am or native"));
}

}  // namespace
}  // namespace axon
