// NVML, loaded at run time (libnvidia-ml.so.1) for what the CUDA driver does not say: how two GPUs
// are linked. Used for the start-up report and for messages; nothing depends on it, so a machine
// without NVML only loses that detail.
#pragma once

#include <string>

namespace axon::gpu {

// How the GPUs at two PCI bus ids ("0000:19:00.0") are connected, as nvidia-smi topo -m names it:
// "NV" (NVLink), "PIX", "PXB", "PHB", "NODE", "SYS", "same GPU", or "unknown (<why>)".
std::string gpuLink(const std::string& busA, const std::string& busB);

// Why NVML is unavailable, or "" when it loaded.
const std::string& nvmlUnavailableReason();

}  // namespace axon::gpu
