// Writes the seed corpus of the fuzz targets: real frames of every request (with wire::Writer, as
// store_client.cpp writes them), store values of every kind, and the environments each launcher
// sets. `make fuzz` builds it as build-fuzz/make_seeds; the seeds in tests/fuzz/corpus came from
//   build-fuzz/make_seeds tests/fuzz/corpus
// (it writes DIR/wire/seed-* and DIR/launch/seed-*, replacing files of the same names only).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/blob.hpp"
#include "bootstrap/setup_step.hpp"
#include "bootstrap/store_handshake.hpp"
#include "bootstrap/wire.hpp"
#include "fuzz_key.hpp"

namespace {

using namespace axon;
using namespace axon::wire;
namespace fs = std::filesystem;

void put(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream f(dir / ("seed-" + name), std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", (dir / name).c_str());
    std::exit(1);
  }
}

std::uint8_t op(Op o) { return static_cast<std::uint8_t>(o); }

// A Hello as PE `rank` of build `version` sends it, proven under the fuzz target's key and nonce.
std::string provenHello(std::uint32_t rank, const std::string& version) {
  HelloClaims claims;
  for (std::size_t i = 0; i < claims.clientNonce.size(); ++i) claims.clientNonce[i] = static_cast<std::uint8_t>(0xc0 + i);
  claims.rank = rank;
  claims.version = version;
  return encodeHello(1, fuzzKey(), kFuzzNonce, claims);
}

void wireSeeds(const fs::path& dir) {
  // Values as the runtime writes them (the writers next to each reader).
  BlobWriter peer(BlobKind::PeerCard);
  peer.str("node01").str("pid:[4026531836]").i64(4242).str("/axon-4242-0").u64(1 << 20);
  BlobWriter heap(BlobKind::HeapCall);
  heap.u8(1).u8(0).u64(4096).u64(256).u64(8192).u64(1 << 20);
  BlobWriter split(BlobKind::TeamSplit);
  split.i32(0).i32(2).i32(4).u64(0x3);
  BlobWriter gpu(BlobKind::GpuCard);
  gpu.str("@axon-fd-4242").str("0000:19:00.0");
  const std::vector<std::pair<std::string, std::string>> blobs = {
      {"blob-step-ok", encodeStepContribution({std::nullopt, "payload bytes"})},
      {"blob-step-failed", encodeStepContribution({StepFailure{-1, ErrorCode::OutOfMemory, "PE 1: heap full"}, ""})},
      {"blob-peer-card", peer.take()},
      {"blob-heap-call", heap.take()},
      {"blob-team-split", split.take()},
      {"blob-gpu-card", gpu.take()},
      {"blob-word", wordBlob(0x0123456789abcdefull)},
      {"blob-text", textBlob("10.0.0.7:29501")},
  };
  for (const auto& [name, bytes] : blobs) put(dir, name, bytes);

  // One frame of each request.
  put(dir, "frame-hello", provenHello(3, "0.1.0+gabcdef1234"));
  // A Hello whose proof is wrong (another key), one of the wire version before the handshake, and
  // the store's greeting (what a confused client might echo).
  {
    HelloClaims claims;
    claims.rank = 1;
    claims.version = "0.1.0";
    put(dir, "frame-hello-wrong-key", encodeHello(1, Secret::fromHex(std::string(64, '7'), "another job's key"), kFuzzNonce, claims));
  }
  put(dir, "frame-hello-v2", Writer(1, op(Op::Hello), 2).u32(2).str("0.1.0+gabcdef1234").frame());
  put(dir, "frame-greeting", encodeGreeting(kFuzzNonce));
  put(dir, "frame-set", Writer(2, op(Op::Set)).str("init/card/3").str(blobs[2].second).frame());
  put(dir, "frame-get", Writer(3, op(Op::Get)).u32(2).str("k0").str("k1").frame());
  put(dir, "frame-check", Writer(4, op(Op::Check)).u32(1).str("step-failed/heap/7").frame());
  put(dir, "frame-add", Writer(5, op(Op::Add)).str("counter").i64(-1).frame());
  put(dir, "frame-del", Writer(6, op(Op::Del)).str("step-failed/heap/7").frame());
  put(dir, "frame-bye", Writer(7, op(Op::Bye)).frame());
  put(dir, "frame-gather", Writer(8, op(Op::Gather)).str("heap/7").u32(4).u32(2).str(blobs[0].second).frame());
  put(dir, "frame-gather-missing", Writer(9, op(Op::GatherMissing)).str("heap/7").frame());
  // A Hello of another wire version (only its rank and build are read), and a request of one.
  put(dir, "frame-hello-v1", Writer(1, op(Op::Hello), 1).u32(5).str("0.0.9").frame());
  put(dir, "frame-get-v4", Writer(1, op(Op::Get), 4).u32(1).str("k").frame());
  // A connection's worth: hello, set, gather, bye in one stream.
  put(dir, "stream", provenHello(0, "0.1.0") +
                         Writer(2, op(Op::Set)).str("k").str(wordBlob(7)).frame() +
                         Writer(3, op(Op::Gather)).str("g").u32(1).u32(0).str(blobs[1].second).frame() +
                         Writer(4, op(Op::Bye)).frame());
}

void launchSeeds(const fs::path& dir) {
  const std::vector<std::pair<std::string, std::string>> envs = {
      {"single", "HOME=/root\nPATH=/usr/bin\n"},
      {"axon-run",
       "AXON_RANK=5\nAXON_WORLD_SIZE=8\nAXON_LOCAL_RANK=1\nAXON_LOCAL_SIZE=4\nAXON_STORE_ADDR=head:4242\n"},
      {"axon-one", "AXON_RANK=0\nAXON_WORLD_SIZE=1\n"},
      {"torchrun",
       "RANK=3\nWORLD_SIZE=8\nLOCAL_RANK=3\nLOCAL_WORLD_SIZE=4\nMASTER_ADDR=10.0.0.7\nMASTER_PORT=29500\n"
       "TORCHELASTIC_RUN_ID=run-42\n"},
      {"torchrun-one-node", "RANK=1\nWORLD_SIZE=2\nLOCAL_RANK=1\nLOCAL_WORLD_SIZE=2\nTORCHELASTIC_RUN_ID=run-42\n"},
      {"slurm",
       "SLURM_PROCID=5\nSLURM_NTASKS=8\nSLURM_LOCALID=1\nSLURM_TASKS_PER_NODE=4(x2)\n"
       "SLURM_JOB_NODELIST=gpu[07-09,11],cpu1\nSLURM_JOB_ID=4711\n"},
      {"slurm-step",
       "SLURM_PROCID=0\nSLURM_NTASKS=2\nSLURM_LOCALID=0\nSLURM_JOB_NODELIST=gpu[01-04]\n"
       "SLURM_STEP_NODELIST=gpu[03-04]\nSLURM_JOB_ID=99\nSLURM_STEP_ID=3\n"},
      {"slurm-one-node", "SLURM_PROCID=1\nSLURM_NTASKS=3\nSLURM_LOCALID=1\nSLURM_TASKS_PER_NODE=3\nSLURM_JOB_ID=7\n"},
      {"openmpi",
       "OMPI_COMM_WORLD_RANK=2\nOMPI_COMM_WORLD_SIZE=4\nOMPI_COMM_WORLD_LOCAL_RANK=2\n"
       "OMPI_COMM_WORLD_LOCAL_SIZE=4\nPMIX_NAMESPACE=prterun-host-1234@1\nOMPI_MCA_ess_base_jobid=1234\n"},
      {"openmpi-store",
       "OMPI_COMM_WORLD_RANK=3\nOMPI_COMM_WORLD_SIZE=4\nOMPI_COMM_WORLD_LOCAL_RANK=1\n"
       "OMPI_COMM_WORLD_LOCAL_SIZE=2\nAXON_STORE_ADDR=[fe80::1]:5000\n"},
      {"mpich-hydra",
       "PMI_RANK=1\nPMI_SIZE=2\nMPI_LOCALRANKID=1\nMPI_LOCALNRANKS=2\nPMI_KVSNAME=kvs_4242_0\nPMI_FD=6\n"},
      {"mpich-pmi-port", "PMI_RANK=0\nPMI_SIZE=2\nPMI_PORT=node1:36787\n"},
      // The compact form: a byte >= 0x80 names a variable by its index in launch_fuzz.cpp's kNames
      // (0 AXON_RANK, 1 AXON_WORLD_SIZE, 4 AXON_STORE_ADDR, 12 SLURM_PROCID, 13 SLURM_NTASKS,
      // 15 SLURM_TASKS_PER_NODE, 17 SLURM_JOB_NODELIST, 18 SLURM_JOB_ID).
      {"compact-axon", "\x80" "1\n\x81" "2\n\x84" "h:1\n"},
      {"compact-slurm", "\x8c" "0\n\x8d" "4\n\x8f" "2(x2)\n\x91" "n[1-2]\n\x92" "42\n"},
  };
  for (const auto& [name, text] : envs) put(dir, name, text);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (writes CORPUS_DIR/wire and CORPUS_DIR/launch)\n", argv[0]);
    return 2;
  }
  const fs::path root(argv[1]);
  wireSeeds(root / "wire");
  launchSeeds(root / "launch");
  return 0;
}
