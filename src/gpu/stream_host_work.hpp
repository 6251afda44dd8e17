// Host work in stream order (the GPU backend's stream host worker): stream-ordered operations over
// the staged path (a copy engine cannot carry them, the peer's memory is not mapped),
// stream-ordered collectives across nodes, and stream-ordered two-sided messages. Each
// one is a one-thread kernel on the program's stream that posts a request in a doorbell ring
// (stream_op_ring.hpp) and waits until the host has done the work. Work after it on the stream
// starts only then. The kernel can be captured into a CUDA graph; each replay posts the request
// again and the work runs again.
//
// The ring is served by the PE's progress engine, on its own thread only (engineOnly): the work
// may wait itself (a collective), so it must not run inside a caller's wait, and it must run while
// callers wait.
//
// Not a host node (cuLaunchHostFunc): on the GPU machine, launching a graph that held host nodes
// blocked inside cuGraphLaunch while holding a lock that other threads' kernel launches wait for;
// the staging proxy launches kernels, so PEs that replayed such graphs deadlocked each other.
//
// A request enqueued outside a capture runs once, and the worker then forgets it. A captured
// request lives until CUDA releases the graph that holds it (a user object on that graph, whose
// destructor runs once the graph and every executable graph made from it are destroyed and
// their launches complete), or until this object goes.
//
// Work may also end later than it starts (enqueueAsync: stream-ordered messages). The worker then
// serves the next requests, of any stream, while it polls the ones under way, so that a message
// waiting for its match on one stream does not hold up the others. A ring slot is reused only
// once the request that held it has ended (the kernel of a later ticket waits for `done` of its
// own ticket, and that word must only grow).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/progress_engine.hpp"
#include "gpu/driver.hpp"
#include "core/poll_pacer.hpp"
#include "kernels/stream_op_ring.hpp"

namespace axon::gpu {

class StreamHostWork final : public ProgressClient {
 public:
  StreamHostWork(const gpu::DriverApi& cu, CUcontext ctx, int myPe, unsigned long long timeoutNs);
  // Serves what the GPU posts until no run-once op is left (bounded by the timeout), on the
  // calling thread: the progress engine no longer polls it (its thread has stopped).
  ~StreamHostWork() override;

  bool progress() override;
  int armForSleep() override;
  bool engineOnly() const override { return true; }

  // Enqueues `work` (run on the worker thread, with this PE's context current) on `stream`.
  // `what` names it in error reports.
  void enqueue(CUstream stream, std::function<void()> work, std::string what);
  // The check the worker polls for work under way: true once it has ended; throws its failure.
  using Completion = std::function<bool()>;
  // Enqueues work that starts when the stream gets here and ends when the Completion `start`
  // returns says so (an empty one: ended already); the stream's later work waits until then.
  void enqueueAsync(CUstream stream, std::function<Completion()> start, std::string what);

  // The first error a worker met since the last call (then cleared), or nullopt. The stream was
  // released so that it cannot hang; the host API reports the error at its next call.
  std::optional<Error> takeError();

 private:
  struct Request {
    std::function<Completion()> start;
    std::string what;
    bool captured;  // part of a graph: kept, as the graph may run it again
  };
  // Numbers of captured requests whose graphs CUDA has released. Shared with the user objects'
  // destructors, which may run on CUDA's thread after this object is gone.
  struct Released {
    std::mutex mutex;
    std::vector<std::uint64_t> numbers;
    std::atomic<bool> any{false};  // numbers is not empty (checked without the mutex)
  };
  struct GraphHold {
    std::weak_ptr<Released> released;
    std::uint64_t number;
    bool cancelled = false;
  };
  static void CUDA_CB onGraphReleased(void* hold);
  // Ties the captured request `number` to the graph `stream` is capturing into.
  void holdWithGraph(CUstream stream, std::uint64_t number);
  // Deletes request `number`, gives its number back and uncounts it. Called with mutex_ held.
  void forget(std::uint64_t number);
  // Frees the captured requests whose graphs are gone. Called with mutex_ held.
  void reclaimReleased();
  // A request started and not yet ended, by its ticket.
  struct UnderWay {
    std::uint64_t ticket;
    std::uint64_t number;
    Completion completion;
  };
  // Starts the request the ticket at `head` names; marks the ticket done if it has ended, else
  // keeps it under way. False if the GPU has not posted that ticket yet, or its slot's previous
  // ticket is still under way.
  bool serveNext(std::uint64_t head);
  // Polls the requests under way; returns whether any ended.
  bool pollUnderWay();
  // Marks `ticket` done (its stream goes on) and forgets a run-once request.
  void finishTicket(std::uint64_t ticket, std::uint64_t number, Request* r);
  // Request `number`, or nullptr where none is held.
  Request* requestOf(std::uint64_t number);
  // Records a failure of request `r` (reported at the next host call and logged now).
  void recordFailure(Request* r, ErrorCode code, const std::string& why);
  void releaseResources();

  const gpu::DriverApi& cu_;
  CUcontext ctx_;
  int myPe_;
  unsigned long long timeoutNs_;
  kernels::StreamOpRing* ring_ = nullptr;   // pinned, mapped
  CUdeviceptr tickets_ = 0;        // device memory: the next ticket (the kernels' atomic counter)

  std::mutex mutex_;
  int wakeFd_ = -1;                   // eventfd written by enqueue: the engine sleeps on it when idle
  std::uint64_t head_ = 0;            // the next ticket to serve (the engine's thread alone)
  std::vector<UnderWay> underWay_;    // started, not yet ended (the engine's thread alone)
  bool threadReady_ = false;          // the engine's thread has the context and relaxed capture mode
  bool shuttingDown_ = false;         // set by the destructor: posted ops are released, not run
  PollPacer pacer_;
  std::vector<Request*> requests_;    // by request number; nullptr where free
  std::vector<std::uint64_t> freeNumbers_;
  std::size_t runOnceInFlight_ = 0;   // enqueued outside a capture, not yet served
  std::size_t capturedCount_ = 0;     // kept requests: a graph may post them at any time
  std::shared_ptr<Released> released_ = std::make_shared<Released>();
  std::optional<Error> error_;
};

}  // namespace axon::gpu
