// The C API before init(): every call must fail with a status (never crash or throw across the C
// boundary), and axon_last_error() must say why, per thread.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "axon/axon.h"
#include "axon/device/coll_types.hpp"
#include "axon/error.hpp"

namespace {

TEST(CApiBeforeInit, MyPeIsNotInitialized) {
  int pe = -7;
  EXPECT_EQ(axon_my_pe(&pe), AXON_ERR_NOT_INITIALIZED);
  EXPECT_EQ(pe, -7) << "a failed call must leave its output alone";
  const std::string message = axon_last_error();
  EXPECT_NE(message.find("before init"), std::string::npos) << message;
  EXPECT_NE(message.find("my_pe"), std::string::npos) << message;
}

TEST(CApiBeforeInit, OtherCallsAreNotInitializedToo) {
  int n = 0;
  void* p = nullptr;
  EXPECT_EQ(axon_n_pes(&n), AXON_ERR_NOT_INITIALIZED);
  EXPECT_EQ(axon_malloc(64, &p), AXON_ERR_NOT_INITIALIZED);
  EXPECT_EQ(axon_barrier_all(), AXON_ERR_NOT_INITIALIZED);
  EXPECT_EQ(axon_quiet(), AXON_ERR_NOT_INITIALIZED);
  EXPECT_EQ(axon_finalize(), AXON_ERR_NOT_INITIALIZED);
  EXPECT_NE(std::string(axon_last_error()).find("finalize"), std::string::npos)
      << axon_last_error();
}

TEST(CApiBeforeInit, NullOutputIsAnInvalidArgument) {
  EXPECT_EQ(axon_my_pe(nullptr), AXON_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(axon_last_error()).find("NULL"), std::string::npos) << axon_last_error();
}

TEST(CApiBeforeInit, LastErrorIsPerThread) {
  int pe = 0;
  ASSERT_EQ(axon_my_pe(&pe), AXON_ERR_NOT_INITIALIZED);
  std::string seenByAnotherThread = "unset";
  std::thread([&] { seenByAnotherThread = axon_last_error(); }).join();
  EXPECT_EQ(seenByAnotherThread, "");
  EXPECT_NE(std::string(axon_last_error()), "");
}

TEST(CApiBeforeInit, StreamCollectivesAndDeviceHandleAreNotInitialized) {
  long long buf[4] = {};
  EXPECT_EQ(axon_allreduce_on_stream(AXON_TEAM_WORLD, buf, buf, 4, AXON_INT64, AXON_SUM, nullptr),
            AXON_ERR_NOT_INITIALIZED);
  EXPECT_EQ(axon_alltoall_on_stream(AXON_TEAM_WORLD, buf, buf, 1, AXON_INT64, nullptr), AXON_ERR_NOT_INITIALIZED);
  unsigned char handle[AXON_DEVICE_COLL_HANDLE_BYTES];
  EXPECT_EQ(axon_device_coll_handle(AXON_TEAM_WORLD, handle, sizeof handle), AXON_ERR_NOT_INITIALIZED);
  // The caller's buffer is checked before anything else.
  EXPECT_EQ(axon_device_coll_handle(AXON_TEAM_WORLD, handle, sizeof handle - 1), AXON_ERR_INVALID_ARGUMENT);
  const std::string message = axon_last_error();
  EXPECT_NE(message.find("out_bytes " + std::to_string(sizeof handle - 1)), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(sizeof(axon::device::CollHandle)) + " bytes"), std::string::npos) << message;
  EXPECT_EQ(axon_device_coll_handle(AXON_TEAM_WORLD, nullptr, sizeof handle), AXON_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(axon_last_error()).find("NULL"), std::string::npos) << axon_last_error();
}

TEST(CApiDeviceHandle, SizeIsTheDeviceStruct) {
  // C programs allocate AXON_DEVICE_COLL_HANDLE_BYTES and memcpy into axon::device::CollHandle.
  EXPECT_EQ(axon_device_coll_handle_size(), sizeof(axon::device::CollHandle));
  EXPECT_EQ(static_cast<std::size_t>(AXON_DEVICE_COLL_HANDLE_BYTES), sizeof(axon::device::CollHandle));
}

TEST(CApiStatusName, NamesEveryStatus) {
  EXPECT_STREQ(axon_status_name(AXON_SUCCESS), "Success");
  EXPECT_STREQ(axon_status_name(AXON_IN_PROGRESS), "InProgress");
  EXPECT_STREQ(axon_status_name(AXON_ERR_INVALID_ARGUMENT), "InvalidArgument");
  EXPECT_STREQ(axon_status_name(AXON_ERR_INVALID_PE), "InvalidPe");
  EXPECT_STREQ(axon_status_name(AXON_ERR_OUT_OF_BOUNDS), "OutOfBounds");
  EXPECT_STREQ(axon_status_name(AXON_ERR_NOT_INITIALIZED), "NotInitialized");
  EXPECT_STREQ(axon_status_name(AXON_ERR_ALREADY_INITIALIZED), "AlreadyInitialized");
  EXPECT_STREQ(axon_status_name(AXON_ERR_TIMEOUT), "Timeout");
  EXPECT_STREQ(axon_status_name(AXON_ERR_PEER_DEAD), "PeerDead");
  EXPECT_STREQ(axon_status_name(AXON_ERR_BOOTSTRAP), "Bootstrap");
  EXPECT_STREQ(axon_status_name(AXON_ERR_COLLECTIVE_MISMATCH), "CollectiveMismatch");
  EXPECT_STREQ(axon_status_name(AXON_ERR_OUT_OF_MEMORY), "OutOfMemory");
  EXPECT_STREQ(axon_status_name(AXON_ERR_SYSTEM), "System");
  EXPECT_STREQ(axon_status_name(AXON_ERR_UNSUPPORTED), "Unsupported");
  EXPECT_STREQ(axon_status_name(AXON_ERR_INTERNAL), "Internal");
  EXPECT_STREQ(axon_status_name(static_cast<axon_status_t>(-99)), "Unknown");
}

TEST(CApiStatusName, CStatusesEqualTheCppErrorCodes) {
  // The C API returns e.code() cast to axon_status_t: the two enums must not drift apart.
  using axon::ErrorCode;
  EXPECT_EQ(static_cast<int>(ErrorCode::InvalidArgument), AXON_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(static_cast<int>(ErrorCode::InvalidPe), AXON_ERR_INVALID_PE);
  EXPECT_EQ(static_cast<int>(ErrorCode::OutOfBounds), AXON_ERR_OUT_OF_BOUNDS);
  EXPECT_EQ(static_cast<int>(ErrorCode::NotInitialized), AXON_ERR_NOT_INITIALIZED);
  EXPECT_EQ(static_cast<int>(ErrorCode::AlreadyInitialized), AXON_ERR_ALREADY_INITIALIZED);
  EXPECT_EQ(static_cast<int>(ErrorCode::Timeout), AXON_ERR_TIMEOUT);
  EXPECT_EQ(static_cast<int>(ErrorCode::PeerDead), AXON_ERR_PEER_DEAD);
  EXPECT_EQ(static_cast<int>(ErrorCode::Bootstrap), AXON_ERR_BOOTSTRAP);
  EXPECT_EQ(static_cast<int>(ErrorCode::CollectiveMismatch), AXON_ERR_COLLECTIVE_MISMATCH);
  EXPECT_EQ(static_cast<int>(ErrorCode::OutOfMemory), AXON_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(static_cast<int>(ErrorCode::System), AXON_ERR_SYSTEM);
  EXPECT_EQ(static_cast<int>(ErrorCode::Unsupported), AXON_ERR_UNSUPPORTED);
  EXPECT_EQ(static_cast<int>(ErrorCode::Internal), AXON_ERR_INTERNAL);
}

}  // namespace
