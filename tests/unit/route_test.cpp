// The router's decision (transport/route.hpp): which transport each kind of operation takes.
#include <gtest/gtest.h>

#include "transport/route.hpp"

namespace axon {
namespace {

RouteQuery onNode(HeapKind heap, bool mapped) {
  RouteQuery q;
  q.heap = heap;
  q.mapped = mapped;
  return q;
}

TEST(Route, OtherNodesGoToTheNetworkWhateverTheMemory) {
  for (bool gpuOn : {false, true})
    for (bool stream : {false, true})
      for (HeapKind heap : {HeapKind::Host, HeapKind::Gpu}) {
        RouteQuery q;
        q.nodeLocal = false;
        q.networkReaches = true;
        q.gpuOn = gpuOn;
        q.stagedOn = gpuOn;
        q.streamOrdered = stream;
        q.heap = heap;
        q.localOnDevice = gpuOn;
        EXPECT_EQ(chooseRoute(q), Route::Network);
        q.networkReaches = false;
        EXPECT_EQ(chooseRoute(q), Route::Unreachable);
      }
}

TEST(Route, TheHostBackendUsesSharedMemoryOnItsNode) {
  EXPECT_EQ(chooseRoute(onNode(HeapKind::Host, true)), Route::Shm);
  RouteQuery q = onNode(HeapKind::Host, true);
  q.localOnDevice = true;  // cannot happen without the GPU backend; no GPU transport to take
  EXPECT_EQ(chooseRoute(q), Route::Shm);
}

TEST(Route, HostMemoryOnBothSidesStaysOnSharedMemoryWithTheGpuBackend) {
  RouteQuery q = onNode(HeapKind::Host, true);
  q.gpuOn = true;
  q.stagedOn = true;
  EXPECT_EQ(chooseRoute(q), Route::Shm);
}

TEST(Route, GpuMemoryOnEitherSideTakesTheGpuTransports) {
  RouteQuery q = onNode(HeapKind::Gpu, true);
  q.gpuOn = true;
  EXPECT_EQ(chooseRoute(q), Route::CudaIpc);
  q = onNode(HeapKind::Host, true);
  q.gpuOn = true;
  q.localOnDevice = true;  // a device buffer into a peer's host heap: a copy engine
  EXPECT_EQ(chooseRoute(q), Route::CudaIpc);
  q.stagedOn = true;       // the host heap is always mapped: never the staged path
  EXPECT_EQ(chooseRoute(q), Route::CudaIpc);
}

TEST(Route, AnUnmappedGpuHeapTakesTheStagedPathWhenItIsOn) {
  RouteQuery q = onNode(HeapKind::Gpu, false);
  q.gpuOn = true;
  q.stagedOn = true;
  EXPECT_EQ(chooseRoute(q), Route::Staged);
  q.mapped = true;  // a peer this GPU maps, in a job where another pair needs the staged path
  EXPECT_EQ(chooseRoute(q), Route::CudaIpc);
  // Without the staged path an unmapped heap goes to cuda_ipc, which refuses it by name.
  q = onNode(HeapKind::Gpu, false);
  q.gpuOn = true;
  EXPECT_EQ(chooseRoute(q), Route::CudaIpc);
}

TEST(Route, StreamOrderedCallsOnTheNodeAlwaysTakeTheGpuTransports) {
  for (bool mapped : {false, true}) {
    RouteQuery q = onNode(HeapKind::Host, true);
    q.gpuOn = true;
    q.streamOrdered = true;
    EXPECT_EQ(chooseRoute(q), Route::CudaIpc);  // the pinned host heap, by copy engine
    q = onNode(HeapKind::Gpu, mapped);
    q.gpuOn = true;
    q.stagedOn = true;
    q.streamOrdered = true;
    EXPECT_EQ(chooseRoute(q), mapped ? Route::CudaIpc : Route::Staged);
  }
}

}  // namespace
}  // namespace axon
