// The active message ids of a PE's worker, in one place (UCX's ids are per worker; axon uses no
// others).
#pragma once

namespace axon::ucx {

// ucx_am_atomics.hpp
constexpr unsigned kAmAtomic = 1;
constexpr unsigned kAmAtomicReply = 2;
constexpr unsigned kAmPutSignal = 3;
constexpr unsigned kAmGpuPut = 4;
constexpr unsigned kAmGpuGet = 5;
constexpr unsigned kAmGpuGetData = 6;
// ucx_messages.hpp
constexpr unsigned kAmMessage = 7;
constexpr unsigned kAmMessageCredit = 8;
// ucx_rpc.cpp (the staging space's own workers)
constexpr unsigned kAmRpc = 9;

}  // namespace axon::ucx
