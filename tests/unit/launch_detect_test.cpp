// detectLaunch: which launcher started the process, and where the store is, for each launcher
// axon knows and for the order in which it looks at them.
#include <gtest/gtest.h>

#include <string>

#include "core/launch_detect.hpp"

namespace axon {
namespace {

using Vars = std::map<std::string, std::string>;

std::string loopback(const std::string& jobKey) {
  return "127.0.0.1:" + std::to_string(derivedStorePort(jobKey));
}

TEST(DetectLaunch, NothingSetIsAWorldOfOne) {
  LaunchInfo info = detectLaunch({});
  EXPECT_EQ(info.source, "single");
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.worldSize, 1);
  EXPECT_EQ(info.localRank, 0);
  EXPECT_EQ(info.localSize, 1);
  EXPECT_EQ(info.storeAddr, "");  // a world of one picks its own port
}

TEST(DetectLaunch, UnrelatedAndEmptyVariablesAreIgnored) {
  // An exported-but-empty variable is how shells often "unset" things; it must not count.
  LaunchInfo info = detectLaunch({{"HOME", "/root"}, {"AXON_RANK", ""}, {"AXON_WORLD_SIZE", ""},
                                  {"RANK", ""}, {"SLURM_PROCID", ""}});
  EXPECT_EQ(info.source, "single");
  EXPECT_EQ(info.worldSize, 1);
}

TEST(DetectLaunch, AxonVariables) {
  LaunchInfo info = detectLaunch({{"AXON_RANK", "5"},
                                  {"AXON_WORLD_SIZE", "8"},
                                  {"AXON_LOCAL_RANK", "1"},
                                  {"AXON_LOCAL_SIZE", "4"},
                                  {"AXON_STORE_ADDR", "head:4242"}});
  EXPECT_EQ(info.source, "axon");
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.worldSize, 8);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_EQ(info.localSize, 4);
  EXPECT_EQ(info.storeAddr, "head:4242");
  EXPECT_EQ(info.storeHint, "AXON_STORE_ADDR");
}

TEST(DetectLaunch, WithoutLocalVariablesEveryPeIsAssumedOnOneNode) {
  LaunchInfo info =
      detectLaunch({{"AXON_RANK", "2"}, {"AXON_WORLD_SIZE", "3"}, {"AXON_STORE_ADDR", "h:1"}});
  EXPECT_EQ(info.localRank, 2);
  EXPECT_EQ(info.localSize, 3);
}

TEST(DetectLaunch, LocalRankWithoutLocalSizeTakesTheWorldSize) {
  LaunchInfo info = detectLaunch({{"AXON_RANK", "3"},
                                  {"AXON_WORLD_SIZE", "4"},
                                  {"AXON_LOCAL_RANK", "1"},
                                  {"AXON_STORE_ADDR", "h:1"}});
  EXPECT_EQ(info.localRank, 1);
  EXPECT_EQ(info.localSize, 4);
}

TEST(DetectLaunch, AxonWorldOfOneNeedsNoStoreAddress) {
  LaunchInfo info = detectLaunch({{"AXON_RANK", "0"}, {"AXON_WORLD_SIZE", "1"}});
  EXPECT_EQ(info.source, "axon");
  EXPECT_EQ(info.storeAddr, "");
}

TEST(DetectLaunch, TorchrunUsesThePortAfterMasterPort) {
  LaunchInfo info = detectLaunch({{"RANK", "3"},
                                  {"WORLD_SIZE", "8"},
                                  {"LOCAL_RANK", "3"},
                                  {"LOCAL_WORLD_SIZE", "4"},
                                  {"MASTER_ADDR", "10.0.0.7"},
                                  {"MASTER_PORT", "29500"}});
  EXPECT_EQ(info.source, "torchrun");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.worldSize, 8);
  EXPECT_EQ(info.localRank, 3);
  EXPECT_EQ(info.localSize, 4);
  // torchrun's own store holds MASTER_PORT.
  EXPECT_EQ(info.storeAddr, "10.0.0.7:29501");
}

TEST(DetectLaunch, TorchrunWithoutMasterOnOneNodeDerivesAPortFromTheRunId) {
  LaunchInfo info = detectLaunch({{"RANK", "1"},
                                  {"WORLD_SIZE", "2"},
                                  {"LOCAL_RANK", "1"},
                                  {"LOCAL_WORLD_SIZE", "2"},
                                  {"TORCHELASTIC_RUN_ID", "run-42"}});
  EXPECT_EQ(info.storeAddr, loopback("run-42"));
}

TEST(DetectLaunch, SlurmServesOnTheFirstHostAtAPortOfTheJobStep) {
  LaunchInfo info = detectLaunch({{"SLURM_PROCID", "5"},
                                  {"SLURM_NTASKS", "8"},
                                  {"SLURM_LOCALID", "1"},
                                  {"SLURM_TASKS_PER_NODE", "4(x2)"},
                                  {"SLURM_JOB_NODELIST", "gpu[07-09,11],cpu1"},
                                  {"SLURM_JOB_ID", "4711"}});
  EXPECT_EQ(info.source, "slurm");
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.worldSize, 8);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_EQ(info.localSize, 4);  // the "4" of "4(x2)"
  // No SLURM_STEP_ID: step "0".
  EXPECT_EQ(info.storeAddr, "gpu07:" + std::to_string(derivedStorePort("4711.0")));
}

TEST(DetectLaunch, SlurmStepIdIsPartOfThePortKey) {
  // Two steps of one job run side by side: they must not share a store port.
  LaunchInfo info = detectLaunch({{"SLURM_PROCID", "0"},
                                  {"SLURM_NTASKS", "2"},
                                  {"SLURM_LOCALID", "0"},
                                  {"SLURM_JOB_NODELIST", "n[1-2]"},
                                  {"SLURM_JOB_ID", "4711"},
                                  {"SLURM_STEP_ID", "3"}});
  EXPECT_EQ(info.storeAddr, "n1:" + std::to_string(derivedStorePort("4711.3")));
}

TEST(DetectLaunch, SlurmPrefersTheStepNodeList) {
  // A step may run on a subset of the job's nodes; rank 0 of the step is on the step's first.
  LaunchInfo info = detectLaunch({{"SLURM_PROCID", "0"},
                                  {"SLURM_NTASKS", "2"},
                                  {"SLURM_LOCALID", "0"},
                                  {"SLURM_JOB_NODELIST", "gpu[01-04]"},
                                  {"SLURM_STEP_NODELIST", "gpu[03-04]"},
                                  {"SLURM_JOB_ID", "99"}});
  EXPECT_EQ(info.storeAddr, "gpu03:" + std::to_string(derivedStorePort("99.0")));
}

TEST(DetectLaunch, SlurmTasksPerNodeListTakesTheFirstNode) {
  LaunchInfo info = detectLaunch({{"SLURM_PROCID", "1"},
                                  {"SLURM_NTASKS", "3"},
                                  {"SLURM_LOCALID", "1"},
                                  {"SLURM_TASKS_PER_NODE", "2,1"},
                                  {"SLURM_JOB_NODELIST", "a,b"},
                                  {"SLURM_JOB_ID", "7"}});
  EXPECT_EQ(info.localSize, 2);
  EXPECT_EQ(info.storeAddr, "a:" + std::to_string(derivedStorePort("7.0")));
}

TEST(DetectLaunch, SlurmWithoutNodeListOnOneNodeServesOnLoopback) {
  LaunchInfo info = detectLaunch({{"SLURM_PROCID", "1"},
                                  {"SLURM_NTASKS", "2"},
                                  {"SLURM_LOCALID", "1"},
                                  {"SLURM_TASKS_PER_NODE", "2"},
                                  {"SLURM_JOB_ID", "4711"}});
  EXPECT_EQ(info.storeAddr, loopback("4711"));
}

TEST(DetectLaunch, OpenMpiOnOneNodeServesOnLoopbackAtAPortOfTheNamespace) {
  LaunchInfo info = detectLaunch({{"OMPI_COMM_WORLD_RANK", "1"},
                                  {"OMPI_COMM_WORLD_SIZE", "4"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                                  {"PMIX_NAMESPACE", "prterun-host-12345@1"}});
  EXPECT_EQ(info.source, "openmpi");
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.worldSize, 4);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_EQ(info.localSize, 4);
  EXPECT_EQ(info.storeAddr, loopback("prterun-host-12345@1"));
  EXPECT_NE(info.storeHint.find("PMIX_NAMESPACE"), std::string::npos) << info.storeHint;
}

TEST(DetectLaunch, OpenMpiWithoutPmixFallsBackToTheEssJobId) {
  LaunchInfo info = detectLaunch({{"OMPI_COMM_WORLD_RANK", "0"},
                                  {"OMPI_COMM_WORLD_SIZE", "2"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                  {"OMPI_MCA_ess_base_jobid", "987654321"}});
  EXPECT_EQ(info.storeAddr, loopback("987654321"));
}

TEST(DetectLaunch, MpichHydra) {
  LaunchInfo info = detectLaunch({{"PMI_RANK", "2"},
                                  {"PMI_SIZE", "4"},
                                  {"MPI_LOCALRANKID", "2"},
                                  {"MPI_LOCALNRANKS", "4"},
                                  {"PMI_KVSNAME", "kvs_4242_0"}});
  EXPECT_EQ(info.source, "pmi");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.worldSize, 4);
  EXPECT_EQ(info.localRank, 2);
  EXPECT_EQ(info.localSize, 4);
  EXPECT_EQ(info.storeAddr, loopback("kvs_4242_0"));
}

TEST(DetectLaunchPrecedence, AxonVariablesWinOverTorchrun) {
  // `axon run` under a torchrun-style environment: axon's own variables describe the job.
  LaunchInfo info = detectLaunch({{"AXON_RANK", "1"},
                                  {"AXON_WORLD_SIZE", "2"},
                                  {"AXON_STORE_ADDR", "h:1"},
                                  {"RANK", "7"},
                                  {"WORLD_SIZE", "16"},
                                  {"MASTER_ADDR", "m"},
                                  {"MASTER_PORT", "29500"}});
  EXPECT_EQ(info.source, "axon");
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.worldSize, 2);
  EXPECT_EQ(info.storeAddr, "h:1");
}

TEST(DetectLaunchPrecedence, TorchrunInsideSlurmIsTorchrun) {
  // torchrun started by srun sees both; torchrun's ranks are the ones of its workers.
  LaunchInfo info = detectLaunch({{"RANK", "3"},
                                  {"WORLD_SIZE", "4"},
                                  {"MASTER_ADDR", "m"},
                                  {"MASTER_PORT", "100"},
                                  {"SLURM_PROCID", "0"},
                                  {"SLURM_NTASKS", "1"}});
  EXPECT_EQ(info.source, "torchrun");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.storeAddr, "m:101");
}

TEST(DetectLaunchPrecedence, StoreAddrOverridesMasterAddr) {
  LaunchInfo info = detectLaunch({{"RANK", "0"},
                                  {"WORLD_SIZE", "2"},
                                  {"MASTER_ADDR", "m"},
                                  {"MASTER_PORT", "29500"},
                                  {"AXON_STORE_ADDR", "other:5000"}});
  EXPECT_EQ(info.source, "torchrun");
  EXPECT_EQ(info.storeAddr, "other:5000");
  EXPECT_EQ(info.storeHint, "AXON_STORE_ADDR");
}

TEST(DetectLaunchPrecedence, StoreAddrOverridesTheSlurmNodeList) {
  LaunchInfo info = detectLaunch({{"SLURM_PROCID", "0"},
                                  {"SLURM_NTASKS", "2"},
                                  {"SLURM_JOB_NODELIST", "gpu[07-08]"},
                                  {"SLURM_JOB_ID", "1"},
                                  {"AXON_STORE_ADDR", "login:6000"}});
  EXPECT_EQ(info.source, "slurm");
  EXPECT_EQ(info.storeAddr, "login:6000");
}

TEST(DetectLaunchPrecedence, StoreAddrOverridesTheDerivedLoopbackAddress) {
  LaunchInfo info = detectLaunch({{"OMPI_COMM_WORLD_RANK", "0"},
                                  {"OMPI_COMM_WORLD_SIZE", "2"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                  {"PMIX_NAMESPACE", "ns"},
                                  {"AXON_STORE_ADDR", "10.1.2.3:7000"}});
  EXPECT_EQ(info.storeAddr, "10.1.2.3:7000");
}

TEST(DetectLaunchPrecedence, StoreAddrMakesMultiNodeOpenMpiWork) {
  LaunchInfo info = detectLaunch({{"OMPI_COMM_WORLD_RANK", "3"},
                                  {"OMPI_COMM_WORLD_SIZE", "4"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                  {"AXON_STORE_ADDR", "n0:7000"}});
  EXPECT_EQ(info.localSize, 2);
  EXPECT_EQ(info.storeAddr, "n0:7000");
}

}  // namespace
}  // namespace axon
