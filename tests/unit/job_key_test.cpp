// Where a PE's job key comes from (bootstrap/job_key.hpp): AXON_JOB_KEY, AXON_JOB_KEY_FILE, a
// world of one, or the file rank 0 writes for the others (a stale one included), and what a PE
// is told when it cannot have the key. Ends with whole Bootstraps of two ranks proving it.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/job_key.hpp"
#include "core/env.hpp"
#include "core/net.hpp"
#include "expect_error.hpp"

namespace axon {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::errorMessageOf;

// A fresh directory of this test's, removed at the end.
class KeyDir : public ::testing::Test {
 protected:
  KeyDir() {
    std::string tmpl = (fs::temp_directory_path() / "axon-job-key-XXXXXX").string();
    root = ::mkdtemp(tmpl.data());
  }
  ~KeyDir() override { fs::remove_all(root); }

  LaunchInfo launch(int rank, int size = 2, const std::string& storeAddr = "127.0.0.1:4242") const {
    LaunchInfo l;
    l.rank = rank;
    l.worldSize = size;
    l.localRank = rank;
    l.localSize = size;
    l.storeAddr = storeAddr;
    l.storeHint = "test";
    return l;
  }
  JobKeyConfig config() const {
    JobKeyConfig c;
    c.runtimeDir = root + "/run";
    c.homeDir = root + "/home";
    return c;
  }
  static void writeText(const std::string& path, const std::string& text, mode_t mode) {
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
  }

  std::string root;
};

TEST_F(KeyDir, AGivenKeyWinsAndSaysWhereItCameFrom) {
  JobKeyConfig c = config();
  c.key = Secret::fromHex(std::string(64, 'a'), "AXON_JOB_KEY");
  JobKey k = JobKey::resolve(c, launch(1), 1.0);
  EXPECT_EQ(k.secret().hex(), std::string(64, 'a'));
  EXPECT_EQ(k.source(), "AXON_JOB_KEY");
  EXPECT_FALSE(fs::exists(root + "/run")) << "no key file is made when a key is given";
}

TEST_F(KeyDir, AKeyFileMustBeThisUsersAndPrivate) {
  const std::string path = root + "/key";
  writeText(path, std::string(64, 'b') + "\n", 0600);
  JobKeyConfig c = config();
  c.file = path;
  JobKey k = JobKey::resolve(c, launch(1), 1.0);
  EXPECT_EQ(k.secret().hex(), std::string(64, 'b'));
  EXPECT_TRUE(contains(k.source(), "AXON_JOB_KEY_FILE=" + path));
  ::chmod(path.c_str(), 0644);
  EXPECT_TRUE(contains(errorMessageOf([&] { JobKey::resolve(c, launch(1), 1.0); }, ErrorCode::PermissionDenied), "chmod 600"));
}

TEST_F(KeyDir, AWorldOfOneMakesItsOwnKeyWithoutAFile) {
  JobKey k = JobKey::resolve(config(), launch(0, 1, ""), 1.0);
  EXPECT_EQ(k.secret().bytes().size(), Secret::kGeneratedBytes);
  EXPECT_FALSE(fs::exists(root + "/run"));
}

TEST_F(KeyDir, RankZeroWritesAPrivateFileTheOthersReadAndRemovesItAtTheEnd) {
  const std::string path = jobKeyFilePath(config(), launch(0));
  EXPECT_EQ(path.rfind(root + "/run/axon/keys/", 0), 0u) << path;  // one node: the runtime directory
  std::string key;
  {
    JobKey k0 = JobKey::resolve(config(), launch(0), 1.0);
    key = k0.secret().hex();
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_EQ(::stat((root + "/run/axon/keys").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    JobKey k1 = JobKey::resolve(config(), launch(1), 1.0);
    EXPECT_EQ(k1.secret().hex(), key);
    EXPECT_TRUE(contains(k1.source(), path));
    EXPECT_FALSE(contains(k1.source(), key.substr(0, 8)));
  }
  EXPECT_FALSE(fs::exists(path)) << "rank 0 removes its key file";
}

TEST_F(KeyDir, AJobAcrossNodesUsesTheHomeDirectoryAndTheLaunchersJobId) {
  LaunchInfo l = launch(0, 8);
  l.localSize = 4;
  l.jobId = "4711.0";
  l.storeAddr = "gpu07:31234";
  EXPECT_EQ(jobKeyFilePath(config(), l), root + "/home/.axon/keys/job-4711.0-gpu07_31234");
}

TEST_F(KeyDir, ALaterRankReadsAStaleFileThenTheNewOneOnReload) {
  const std::string path = jobKeyFilePath(config(), launch(0));
  fs::create_directories(fs::path(path).parent_path());
  ::chmod((root + "/run/axon/keys").c_str(), 0700);
  writeText(path, std::string(64, 'c'), 0600);  // an earlier job's, left behind by a crash
  JobKey k1 = JobKey::resolve(config(), launch(1), 1.0);
  EXPECT_EQ(k1.secret().hex(), std::string(64, 'c'));
  JobKey k0 = JobKey::resolve(config(), launch(0), 1.0);  // replaces it
  EXPECT_TRUE(k1.reload());
  EXPECT_EQ(k1.secret().hex(), k0.secret().hex());
  EXPECT_FALSE(k1.reload()) << "nothing changed since";
}

TEST_F(KeyDir, APeThatNeverSeesTheFileIsToldWhatToSetWithinItsTimeout) {
  const auto start = std::chrono::steady_clock::now();
  const std::string msg = errorMessageOf([&] { JobKey::resolve(config(), launch(1), 0.3); }, ErrorCode::Bootstrap);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  EXPECT_TRUE(contains(msg, "AXON_JOB_KEY "));
  EXPECT_TRUE(contains(msg, "AXON_JOB_KEY_FILE"));
  EXPECT_TRUE(contains(msg, "PE 1"));
}

// A PE on a node that does not share rank 0's directory would wait all of AXON_TIMEOUT in
// silence: after 5 s it says once what it waits for and what to set.
TEST_F(KeyDir, APeStillWaitingForTheFileSaysSoOnceLongBeforeItsTimeout) {
  testing::internal::CaptureStderr();
  errorMessageOf([&] { JobKey::resolve(config(), launch(2), 5.6); }, ErrorCode::Bootstrap);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(err, "still waiting for the job key file")) << err;
  EXPECT_TRUE(contains(err, "AXON_JOB_KEY_FILE")) << err;
  EXPECT_EQ(err.find("still waiting"), err.rfind("still waiting")) << "said more than once: " << err;
}

TEST_F(KeyDir, AKeyDirectoryOthersMayEnterIsRefused) {
  fs::create_directories(root + "/run/axon/keys");
  ::chmod((root + "/run/axon/keys").c_str(), 0755);
  const std::string msg = errorMessageOf([&] { JobKey::resolve(config(), launch(0), 1.0); }, ErrorCode::PermissionDenied);
  EXPECT_TRUE(contains(msg, "chmod 700 " + root + "/run/axon/keys")) << msg;
}

TEST(JobKeyEnv, TheVariablesAreReadOnceAndCheckedByName) {
  Env e = Env::fromVars({{"AXON_JOB_KEY", std::string(64, 'd')}, {"HOME", "/home/u"}, {"XDG_RUNTIME_DIR", "/run/user/7"}});
  EXPECT_EQ(e.jobKey.key.hex(), std::string(64, 'd'));
  EXPECT_EQ(e.jobKey.homeDir, "/home/u");
  EXPECT_EQ(e.jobKey.runtimeDir, "/run/user/7");
  EXPECT_EQ(Env::fromVars({{"AXON_JOB_KEY_FILE", "/k"}}).jobKey.file, "/k");
  EXPECT_TRUE(contains(errorMessageOf([] { Env::fromVars({{"AXON_JOB_KEY", "12zz"}}); }, ErrorCode::InvalidArgument), "AXON_JOB_KEY"));
  EXPECT_TRUE(contains(errorMessageOf([] { Env::fromVars({{"AXON_JOB_KEY", std::string(64, 'd')}, {"AXON_JOB_KEY_FILE", "/k"}}); },
                                      ErrorCode::InvalidArgument),
                       "both set"));
}

TEST(JobKeyEnv, LaunchersJobIdsNameTheKeyFile) {
  EXPECT_EQ(detectLaunch({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "4711"}, {"SLURM_STEP_ID", "3"}}).jobId, "4711.3");
  EXPECT_EQ(detectLaunch({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TORCHELASTIC_RUN_ID", "run-9"}}).jobId, "run-9");
  EXPECT_EQ(detectLaunch({{"AXON_RANK", "0"}, {"AXON_WORLD_SIZE", "2"}, {"AXON_STORE_ADDR", "h:1"}}).jobId, "");
}

// Two ranks as threads, as two PEs of a job that were given no key.
void runTwo(const JobKeyConfig& keys, const std::string& addr, bool rankOneFirst) {
  auto rank = [&](int r) {
    LaunchInfo l;
    l.rank = r;
    l.worldSize = 2;
    l.localSize = 2;
    l.localRank = r;
    l.storeAddr = addr;
    l.storeHint = "test";
    Bootstrap boot(l, 10.0, keys);
    const auto all = boot.allgatherWorld("hello", "from " + std::to_string(r));
    boot.finalize();
    return all;
  };
  auto one = std::async(std::launch::async, rank, 1);
  if (rankOneFirst) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto zero = std::async(std::launch::async, rank, 0);
  const std::vector<std::string> want{"from 0", "from 1"};
  EXPECT_EQ(zero.get(), want);
  EXPECT_EQ(one.get(), want);
}

TEST_F(KeyDir, TwoPesGivenNoKeyShareRankZerosFileAndItIsGoneAfterFinalize) {
  const std::string addr = "127.0.0.1:" + std::to_string(net::freeLoopbackPort());
  runTwo(config(), addr, false);
  EXPECT_FALSE(fs::exists(jobKeyFilePath(config(), launch(0, 2, addr))));
}

TEST_F(KeyDir, RankZerosFileIsGoneOnceTheWholeWorldHasMetSoAKilledJobLeavesNone) {
  const std::string addr = "127.0.0.1:" + std::to_string(net::freeLoopbackPort());
  const std::string path = jobKeyFilePath(config(), launch(0, 2, addr));
  const JobKeyConfig keys = config();
  auto rank = [&](int r) {
    Bootstrap boot(launch(r, 2, addr), 10.0, keys);
    const bool before = fs::exists(path);  // rank 0 wrote it before serving; rank 1 read it
    boot.allgatherWorld("hello", "x");
    // Rank 0 removed it as its rendezvous returned, before it entered the next one.
    boot.barrierWorld("after");
    const bool after = fs::exists(path);
    boot.barrierWorld("checked");  // no PE finalizes before both looked
    boot.finalize();
    return std::make_pair(before, after);
  };
  auto one = std::async(std::launch::async, rank, 1);
  auto zero = std::async(std::launch::async, rank, 0);
  EXPECT_EQ(zero.get(), std::make_pair(true, false));
  EXPECT_EQ(one.get(), std::make_pair(true, false));
}

TEST_F(KeyDir, APeThatReadAnEarlierJobsFileRetriesWithTheNewKey) {
  const std::string addr = "127.0.0.1:" + std::to_string(net::freeLoopbackPort());
  const std::string path = jobKeyFilePath(config(), launch(0, 2, addr));
  fs::create_directories(fs::path(path).parent_path());
  ::chmod((root + "/run/axon/keys").c_str(), 0700);
  writeText(path, std::string(64, 'f'), 0600);
  // Rank 1 starts first: it reads the stale key, waits for the store, is refused, reads again.
  runTwo(config(), addr, true);
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace axon
