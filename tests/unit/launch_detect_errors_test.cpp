// detectLaunch on malformed or incomplete launcher variables: the error code says what kind of
// problem it is, and the message names the variable the user has to fix.
#include <gtest/gtest.h>

#include <string>

#include "core/launch_detect.hpp"
#include "expect_error.hpp"

namespace axon {
namespace {

using test::contains;
using test::errorMessageOf;
using Vars = std::map<std::string, std::string>;

std::string detectError(const Vars& vars, ErrorCode code) {
  return errorMessageOf([&] { detectLaunch(vars); }, code);
}

TEST(DetectLaunchErrors, RankNotBelowSizeIsInvalid) {
  std::string msg = detectError(
      {{"AXON_RANK", "4"}, {"AXON_WORLD_SIZE", "4"}, {"AXON_STORE_ADDR", "h:1"}},
      ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(msg, "rank 4"));
  EXPECT_TRUE(contains(msg, "[0, 4)"));
}

// Exposes a library defect: launch_detect.hpp promises a message "naming the variable" for
// rank >= size, but validate() only says "(from axon variables)".
TEST(DetectLaunchErrors, RankNotBelowSizeNamesTheRankVariable) {
  std::string msg = detectError(
      {{"AXON_RANK", "4"}, {"AXON_WORLD_SIZE", "4"}, {"AXON_STORE_ADDR", "h:1"}},
      ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(msg, "AXON_RANK"));
}

TEST(DetectLaunchErrors, NegativeRankIsInvalid) {
  std::string msg = detectError(
      {{"AXON_RANK", "-1"}, {"AXON_WORLD_SIZE", "4"}, {"AXON_STORE_ADDR", "h:1"}},
      ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(msg, "rank -1"));
}

TEST(DetectLaunchErrors, ZeroWorldSizeIsInvalid) {
  std::string msg = detectError({{"AXON_RANK", "0"}, {"AXON_WORLD_SIZE", "0"}},
                                ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(msg, "world size 0"));
}

// Found by tests/fuzz/launch_fuzz.cpp: a negative local size let any local rank through, and a
// negative local rank picks GPU -1.
TEST(DetectLaunchErrors, NegativeLocalSizeOrRankIsInvalid) {
  std::string msg = detectError({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "-7"},
                                 {"LOCAL_WORLD_SIZE", "-2"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "29500"}},
                                ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(msg, "local size -2"));
  msg = detectError({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "5"},
                     {"SLURM_TASKS_PER_NODE", "-1"}, {"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "n1"}},
                    ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(msg, "local size -1"));
  msg = detectError({{"AXON_RANK", "0"}, {"AXON_WORLD_SIZE", "2"}, {"AXON_LOCAL_RANK", "-1"},
                     {"AXON_LOCAL_SIZE", "2"}, {"AXON_STORE_ADDR", "h:1"}},
                    ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(msg, "local rank -1"));
}

// Found by reading the code behind tests/fuzz: MASTER_PORT + 1 overflowed an int.
TEST(DetectLaunchErrors, MasterPortWithoutANextPortIsInvalid) {
  for (const char* port : {"2147483647", "65535", "0", "-3"}) {
    std::string msg = detectError({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", port}},
                                  ErrorCode::InvalidArgument);
    EXPECT_TRUE(contains(msg, std::string("MASTER_PORT=") + port));
  }
}

TEST(DetectLaunchErrors, LocalRankNotBelowLocalSizeIsInvalid) {
  std::string msg = detectError({{"AXON_RANK", "2"},
                                 {"AXON_WORLD_SIZE", "4"},
                                 {"AXON_LOCAL_RANK", "2"},
                                 {"AXON_LOCAL_SIZE", "2"},
                                 {"AXON_STORE_ADDR", "h:1"}},
                                ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(msg, "local rank 2"));
}

TEST(DetectLaunchErrors, NonIntegerRankNamesTheVariableAndValue) {
  // Trailing or leading junk must not be read as a number either.
  for (std::string bad : {"one", "3x", " 3", "3 ", "1.0"}) {
    SCOPED_TRACE("AXON_RANK='" + bad + "'");
    std::string msg = detectError({{"AXON_RANK", bad}, {"AXON_WORLD_SIZE", "4"}},
                                  ErrorCode::InvalidArgument);
    EXPECT_TRUE(contains(msg, "AXON_RANK='" + bad + "'"));
  }
}

TEST(DetectLaunchErrors, NonIntegerSizeNamesTheVariable) {
  std::string msg = detectError({{"RANK", "0"}, {"WORLD_SIZE", "8.0"}}, ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(msg, "WORLD_SIZE='8.0'"));
}

TEST(DetectLaunchErrors, NonIntegerLocalRankNamesTheVariable) {
  std::string msg = detectError(
      {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"},
       {"OMPI_COMM_WORLD_LOCAL_RANK", "zero"}},
      ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(msg, "OMPI_COMM_WORLD_LOCAL_RANK"));
}

TEST(DetectLaunchErrors, NonIntegerMasterPortNamesTheVariable) {
  std::string msg = detectError(
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "http"}},
      ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(msg, "MASTER_PORT"));
}

TEST(DetectLaunchErrors, MalformedSlurmTasksPerNodeNamesTheVariable) {
  std::string msg = detectError({{"SLURM_PROCID", "0"},
                                 {"SLURM_NTASKS", "2"},
                                 {"SLURM_LOCALID", "0"},
                                 {"SLURM_TASKS_PER_NODE", "x(2)"}},
                                ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(msg, "SLURM_TASKS_PER_NODE"));
}

TEST(DetectLaunchErrors, RankWithoutSizeNamesBothVariables) {
  std::string axon = detectError({{"AXON_RANK", "0"}}, ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(axon, "AXON_RANK"));
  EXPECT_TRUE(contains(axon, "AXON_WORLD_SIZE"));

  std::string slurm = detectError({{"SLURM_PROCID", "0"}}, ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(slurm, "SLURM_PROCID"));
  EXPECT_TRUE(contains(slurm, "SLURM_NTASKS"));
}

TEST(DetectLaunchErrors, AxonRanksWithoutStoreAddrCannotBootstrap) {
  std::string msg =
      detectError({{"AXON_RANK", "1"}, {"AXON_WORLD_SIZE", "2"}}, ErrorCode::Bootstrap);
  EXPECT_TRUE(contains(msg, "AXON_STORE_ADDR"));
}

TEST(DetectLaunchErrors, MultiNodeOpenMpiWithoutStoreAddrCannotBootstrap) {
  // Local size 2 of 4: the PEs span nodes, so a loopback store would split the job in two.
  std::string msg = detectError({{"OMPI_COMM_WORLD_RANK", "3"},
                                 {"OMPI_COMM_WORLD_SIZE", "4"},
                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                 {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                 {"PMIX_NAMESPACE", "ns"}},
                                ErrorCode::Bootstrap);
  EXPECT_TRUE(contains(msg, "openmpi"));
  EXPECT_TRUE(contains(msg, "AXON_STORE_ADDR"));
}

TEST(DetectLaunchErrors, OneNodeOpenMpiWithoutAJobIdCannotBootstrap) {
  // Without a job identity there is no port every PE would agree on.
  std::string msg = detectError({{"OMPI_COMM_WORLD_RANK", "0"},
                                 {"OMPI_COMM_WORLD_SIZE", "2"},
                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                 {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}},
                                ErrorCode::Bootstrap);
  EXPECT_TRUE(contains(msg, "AXON_STORE_ADDR"));
}

TEST(DetectLaunchErrors, TorchrunWithoutMasterOrRunIdCannotBootstrap) {
  std::string msg = detectError({{"RANK", "0"}, {"WORLD_SIZE", "2"}}, ErrorCode::Bootstrap);
  EXPECT_TRUE(contains(msg, "torchrun"));
  EXPECT_TRUE(contains(msg, "AXON_STORE_ADDR"));
}

}  // namespace
}  // namespace axon
