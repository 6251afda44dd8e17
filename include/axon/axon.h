/* axon C API. Every call returns an axon_status_t; on failure axon_last_error() says why. */
#ifndef AXON_AXON_H
#define AXON_AXON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  AXON_SUCCESS = 0,
  AXON_IN_PROGRESS = 1,
  AXON_ERR_INVALID_ARGUMENT = -1,
  AXON_ERR_INVALID_PE = -2,
  AXON_ERR_OUT_OF_BOUNDS = -3,
  AXON_ERR_NOT_INITIALIZED = -4,
  AXON_ERR_ALREADY_INITIALIZED = -5,
  AXON_ERR_TIMEOUT = -6,
  AXON_ERR_PEER_DEAD = -7,
  AXON_ERR_BOOTSTRAP = -8,
  AXON_ERR_COLLECTIVE_MISMATCH = -9,
  AXON_ERR_OUT_OF_MEMORY = -10,
  AXON_ERR_SYSTEM = -11,
  AXON_ERR_UNSUPPORTED = -12,
  AXON_ERR_INTERNAL = -13,
  AXON_ERR_CUDA = -14,
  AXON_ERR_UCX = -15,
  AXON_ERR_TRUNCATED = -16,
  AXON_ERR_SPACE_FULL = -17,
  AXON_ERR_EVICTED = -18,
  AXON_ERR_INCOMPLETE = -19,
  AXON_ERR_SERVER_LOST = -20,
  AXON_ERR_PERMISSION_DENIED = -21, /* a connection did not prove the job's or the space's key */
  AXON_ERR_SERVER_UNREACHABLE = -22 /* a staging server was never reached (refused, no such host, no greeting) */
} axon_status_t;

typedef enum { AXON_SIGNAL_SET = 0, AXON_SIGNAL_ADD = 1 } axon_signal_op_t;
typedef enum { AXON_CMP_EQ = 0, AXON_CMP_NE, AXON_CMP_GT, AXON_CMP_GE, AXON_CMP_LT, AXON_CMP_LE } axon_cmp_t;

/* Teams are handles; AXON_TEAM_WORLD and AXON_TEAM_NODE always exist after init. */
typedef int32_t axon_team_t;
#define AXON_TEAM_INVALID ((axon_team_t)-1)
#define AXON_TEAM_WORLD ((axon_team_t)0)
#define AXON_TEAM_NODE ((axon_team_t)1)

/* The message of the last failed call on this thread ("" when none). */
const char* axon_last_error(void);
const char* axon_status_name(axon_status_t status);

axon_status_t axon_init(void);
axon_status_t axon_finalize(void);
axon_status_t axon_my_pe(int* pe);
axon_status_t axon_n_pes(int* n);
/* How this PE reaches `pe` ("self", "shm", "cuda_ipc", "staged", "ucx:tcp", ...), as a
 * NUL-terminated string in buf; AXON_ERR_INVALID_ARGUMENT naming the length needed when `len`
 * is too small. */
axon_status_t axon_path_to(int pe, char* buf, size_t len);

axon_status_t axon_malloc(size_t bytes, void** out);
axon_status_t axon_calloc(size_t count, size_t elem_bytes, void** out);
axon_status_t axon_free(void* ptr);
axon_status_t axon_ptr(const void* addr, int pe, void** out);

axon_status_t axon_put(void* dest, const void* src, size_t bytes, int pe);
axon_status_t axon_get(void* dest, const void* src, size_t bytes, int pe);
axon_status_t axon_put_nbi(void* dest, const void* src, size_t bytes, int pe);
axon_status_t axon_get_nbi(void* dest, const void* src, size_t bytes, int pe);
axon_status_t axon_put_signal(void* dest, const void* src, size_t bytes, uint64_t* sig, uint64_t value,
                              axon_signal_op_t op, int pe);
axon_status_t axon_put_signal_nbi(void* dest, const void* src, size_t bytes, uint64_t* sig,
                                  uint64_t value, axon_signal_op_t op, int pe);
axon_status_t axon_signal_op(uint64_t* sig, uint64_t value, axon_signal_op_t op, int pe);
axon_status_t axon_signal_fetch(const uint64_t* sig, uint64_t* out);
axon_status_t axon_signal_wait_until(uint64_t* sig, axon_cmp_t cmp, uint64_t value, uint64_t* seen);

/* Atomics: T is int32, int64, uint32, uint64. `fetched` may be NULL for the fetching forms. */
#define AXON_DECLARE_ATOMICS(T, CT)                                                            \
  axon_status_t axon_atomic_fetch_##T(const CT* src, int pe, CT* fetched);                   \
  axon_status_t axon_atomic_set_##T(CT* dest, CT value, int pe);                             \
  axon_status_t axon_atomic_swap_##T(CT* dest, CT value, int pe, CT* fetched);               \
  axon_status_t axon_atomic_compare_swap_##T(CT* dest, CT cond, CT value, int pe, CT* fetched); \
  axon_status_t axon_atomic_fetch_add_##T(CT* dest, CT value, int pe, CT* fetched);          \
  axon_status_t axon_atomic_add_##T(CT* dest, CT value, int pe);                             \
  axon_status_t axon_atomic_fetch_and_##T(CT* dest, CT value, int pe, CT* fetched);          \
  axon_status_t axon_atomic_fetch_or_##T(CT* dest, CT value, int pe, CT* fetched);           \
  axon_status_t axon_atomic_fetch_xor_##T(CT* dest, CT value, int pe, CT* fetched);
AXON_DECLARE_ATOMICS(int32, int32_t)
AXON_DECLARE_ATOMICS(int64, int64_t)
AXON_DECLARE_ATOMICS(uint32, uint32_t)
AXON_DECLARE_ATOMICS(uint64, uint64_t)
#undef AXON_DECLARE_ATOMICS

axon_status_t axon_fence(void);
axon_status_t axon_quiet(void);
axon_status_t axon_barrier_all(void);
axon_status_t axon_sync_all(void);

axon_status_t axon_team_my_pe(axon_team_t team, int* pe);
axon_status_t axon_team_n_pes(axon_team_t team, int* n);
axon_status_t axon_team_translate_pe(axon_team_t from, int pe, axon_team_t to, int* out);
/* *out is AXON_TEAM_INVALID on PEs outside the new team. */
axon_status_t axon_team_split_strided(axon_team_t parent, int start, int stride, int size, axon_team_t* out);
/* Collective over `parent`: PEs passing the same colour form a team, ordered by key (ties keep the
 * parent's order); a negative colour joins none (*out is AXON_TEAM_INVALID). */
axon_status_t axon_team_split(axon_team_t parent, int colour, int key, axon_team_t* out);
/* This PE's bound, in seconds, on the team's waits (collectives, barriers, two-sided messages);
 * 0 restores AXON_TIMEOUT (Team::setTimeout). axon_team_timeout gives the bound in force. */
axon_status_t axon_team_set_timeout(axon_team_t team, double seconds);
axon_status_t axon_team_timeout(axon_team_t team, double* seconds);
axon_status_t axon_team_barrier(axon_team_t team);
axon_status_t axon_team_sync(axon_team_t team);
axon_status_t axon_team_destroy(axon_team_t team);

/* Collectives (axon/collectives.hpp): every member of `team` makes the same calls with the same
 * count, type, op and root; a difference returns AXON_ERR_COLLECTIVE_MISMATCH on every PE. */
typedef enum {
  AXON_INT8, AXON_UINT8, AXON_INT32, AXON_UINT32, AXON_INT64, AXON_UINT64,
  AXON_FLOAT16, AXON_BFLOAT16, AXON_FLOAT32, AXON_FLOAT64
} axon_datatype_t;
typedef enum { AXON_SUM, AXON_PROD, AXON_MIN, AXON_MAX } axon_reduce_op_t;
axon_status_t axon_barrier(axon_team_t team);
axon_status_t axon_broadcast(axon_team_t team, const void* src, void* dst, size_t count, axon_datatype_t type, int root);
axon_status_t axon_reduce(axon_team_t team, const void* src, void* dst, size_t count, axon_datatype_t type,
                          axon_reduce_op_t op, int root);
axon_status_t axon_allreduce(axon_team_t team, const void* src, void* dst, size_t count, axon_datatype_t type,
                             axon_reduce_op_t op);
/* count: elements per PE. */
axon_status_t axon_allgather(axon_team_t team, const void* src, void* dst, size_t count, axon_datatype_t type);
axon_status_t axon_reduce_scatter(axon_team_t team, const void* src, void* dst, size_t count, axon_datatype_t type,
                                  axon_reduce_op_t op);
axon_status_t axon_alltoall(axon_team_t team, const void* src, void* dst, size_t count, axon_datatype_t type);

/* The GPU backend (axon/gpu.hpp). `stream` is a cudaStream_t / CUstream (NULL: the legacy default
 * stream). Without the GPU backend these return AXON_ERR_UNSUPPORTED with the reason. */
axon_status_t axon_gpu_enabled(int* enabled);
axon_status_t axon_gpu_device(int* ordinal);
/* Symmetric host memory (the host heap), pinned for the GPU when the GPU backend is on. */
axon_status_t axon_malloc_host(size_t bytes, void** out);
axon_status_t axon_put_on_stream(void* dest, const void* src, size_t bytes, int pe, void* stream);
axon_status_t axon_get_on_stream(void* dest, const void* src, size_t bytes, int pe, void* stream);
axon_status_t axon_put_signal_on_stream(void* dest, const void* src, size_t bytes, uint64_t* sig,
                                        uint64_t value, axon_signal_op_t op, int pe, void* stream);
axon_status_t axon_signal_op_on_stream(uint64_t* sig, uint64_t value, axon_signal_op_t op, int pe, void* stream);
axon_status_t axon_signal_wait_until_on_stream(uint64_t* sig, axon_cmp_t cmp, uint64_t value, void* stream);
axon_status_t axon_quiet_on_stream(void* stream);
/* Waits for the stream's work, then returns what a stream-ordered call served by the host met on
 * the way (a stream-ordered message's AXON_ERR_TRUNCATED, AXON_ERR_TIMEOUT, ...). */
axon_status_t axon_stream_synchronize(void* stream);
axon_status_t axon_barrier_on_stream(axon_team_t team, void* stream);
axon_status_t axon_barrier_all_on_stream(void* stream);

/* Stream-ordered collectives: the arguments of the blocking ones, then `stream`. Each enqueues a
 * kernel on the team's GPU workspace and returns at once; work enqueued after it on `stream` sees
 * the result. src and dst must be GPU memory; the calls can be captured into a CUDA graph. Issue a
 * team's collectives in one order on every member, one stream per team. They return
 * AXON_ERR_UNSUPPORTED without the GPU backend and on teams whose GPUs cannot all map each
 * other's memory (the blocking calls take the host path there). */
axon_status_t axon_broadcast_on_stream(axon_team_t team, const void* src, void* dst, size_t count,
                                       axon_datatype_t type, int root, void* stream);
axon_status_t axon_reduce_on_stream(axon_team_t team, const void* src, void* dst, size_t count, axon_datatype_t type,
                                    axon_reduce_op_t op, int root, void* stream);
axon_status_t axon_allreduce_on_stream(axon_team_t team, const void* src, void* dst, size_t count,
                                       axon_datatype_t type, axon_reduce_op_t op, void* stream);
axon_status_t axon_allgather_on_stream(axon_team_t team, const void* src, void* dst, size_t count,
                                       axon_datatype_t type, void* stream);
axon_status_t axon_reduce_scatter_on_stream(axon_team_t team, const void* src, void* dst, size_t count,
                                            axon_datatype_t type, axon_reduce_op_t op, void* stream);
axon_status_t axon_alltoall_on_stream(axon_team_t team, const void* src, void* dst, size_t count,
                                      axon_datatype_t type, void* stream);

/* Two-sided messages (axon/p2p.hpp): MPI's matching rules on any team; source and dest are team
 * indices. A request is freed by the axon_wait or axon_test that completes it (*req becomes
 * NULL), also when it completes with an error. status may be NULL. */
#define AXON_ANY_SOURCE (-1)
#define AXON_ANY_TAG (-1)
typedef struct axon_request_s* axon_request_t;
typedef struct {
  int source;   /* the sender's index in the team */
  int tag;
  size_t bytes; /* the message's length */
} axon_msg_status_t;
axon_status_t axon_send(const void* buf, size_t bytes, int dest, int tag, axon_team_t team);
axon_status_t axon_recv(void* buf, size_t capacity, int source, int tag, axon_team_t team, axon_msg_status_t* status);
axon_status_t axon_isend(const void* buf, size_t bytes, int dest, int tag, axon_team_t team, axon_request_t* req);
axon_status_t axon_irecv(void* buf, size_t capacity, int source, int tag, axon_team_t team, axon_request_t* req);
axon_status_t axon_wait(axon_request_t* req, axon_msg_status_t* status);
/* AXON_IN_PROGRESS while the request is not complete. */
axon_status_t axon_test(axon_request_t* req, axon_msg_status_t* status);
axon_status_t axon_probe(int source, int tag, axon_team_t team, axon_msg_status_t* status);
/* *found is 1 and *status set when a matching message waits, else 0. */
axon_status_t axon_iprobe(int source, int tag, axon_team_t team, int* found, axon_msg_status_t* status);
/* Stream-ordered forms (GPU backend; axon::sendOnStream): enqueued on `stream` (a cudaStream_t),
 * paired with the peer's calls in call order, never with axon_send/axon_recv. A failure is
 * returned by the next call that synchronizes with the stream (axon_stream_synchronize). Calls
 * between axon_group_start and axon_group_end start together (an exchange). */
axon_status_t axon_send_on_stream(const void* buf, size_t bytes, int dest, axon_team_t team, void* stream);
axon_status_t axon_recv_on_stream(void* buf, size_t capacity, int source, axon_team_t team, void* stream);
axon_status_t axon_group_start(void);
axon_status_t axon_group_end(void);

/* The staging space (axon/space.hpp): a client of staging servers; no axon_init needed. Boxes are
 * half-open [lo, hi) of `ndim` (1 to 8) int64 entries, row-major: lo inclusive, hi exclusive, like
 * Python slices (DataSpaces' inclusive ub is hi - 1); a put's block is offset + count (ADIOS2's
 * start + count). Versions are >= 0 (a negative one: AXON_ERR_INVALID_ARGUMENT); wait_version's
 * at_least is a bound (below 0: any version). Buffers are host or GPU memory. A get's output is a
 * pointer and out_bytes: the byte count (at least the box's) is all that can be checked, and the
 * box lands dense, row-major, in the variable's type. Errors:
 * AXON_ERR_INVALID_ARGUMENT (bad boxes, names, types, versions, a buffer too small),
 * AXON_ERR_SPACE_FULL, AXON_ERR_EVICTED, AXON_ERR_INCOMPLETE (the message lists the missing boxes),
 * AXON_ERR_SERVER_LOST (a server reached, then lost), AXON_ERR_SERVER_UNREACHABLE (connecting: a
 * server never reached, a missing or stale contact file), AXON_ERR_PERMISSION_DENIED (no key, a
 * wrong one, or a server that could not prove it). A timeout <= 0 means AXON_TIMEOUT. */
typedef struct axon_space_s* axon_space_t;
typedef struct axon_space_request_s* axon_space_request_t;
/* addr NULL or "": AXON_SPACE_ADDR, then the contact file AXON_SPACE_FILE names. The space's key:
 * AXON_SPACE_KEY, else the key in that contact file. */
axon_status_t axon_space_connect(const char* addr, double timeout, axon_space_t* out);
/* The same with the space's key given (hex; NULL or "": as axon_space_connect). */
axon_status_t axon_space_connect_key(const char* addr, const char* key, double timeout, axon_space_t* out);
/* Waits for open requests, disconnects and frees the client. */
axon_status_t axon_space_close(axon_space_t space);
axon_status_t axon_space_define(axon_space_t space, const char* name, int ndim, const int64_t* shape,
                                axon_datatype_t type, int keep_versions);
axon_status_t axon_space_put(axon_space_t space, const char* name, int64_t version, int ndim, const int64_t* offset,
                             const int64_t* count, const void* data, double timeout);
axon_status_t axon_space_get(axon_space_t space, const char* name, int64_t version, int ndim, const int64_t* lo,
                             const int64_t* hi, void* out, size_t out_bytes, double timeout);
axon_status_t axon_space_iput(axon_space_t space, const char* name, int64_t version, int ndim, const int64_t* offset,
                              const int64_t* count, const void* data, double timeout, axon_space_request_t* req);
axon_status_t axon_space_iget(axon_space_t space, const char* name, int64_t version, int ndim, const int64_t* lo,
                              const int64_t* hi, void* out, size_t out_bytes, double timeout, axon_space_request_t* req);
/* Completes and frees the request (*req becomes NULL). axon_space_test returns AXON_IN_PROGRESS while
 * it runs. */
axon_status_t axon_space_wait(axon_space_request_t* req);
axon_status_t axon_space_test(axon_space_request_t* req);
axon_status_t axon_space_wait_version(axon_space_t space, const char* name, int64_t at_least, double timeout,
                                      int64_t* version);
axon_status_t axon_space_release(axon_space_t space, const char* name, int64_t version);
/* Removes the variable from every server (every version, held ones too; its memory goes back to
 * --mem) and returns once it is gone, after which the name may be defined again. Gets and puts
 * still waiting on it fail with AXON_ERR_INVALID_ARGUMENT; AXON_ERR_TIMEOUT when transfers under
 * way on it outlast the client's timeout (it still goes when they end). */
axon_status_t axon_space_remove(axon_space_t space, const char* name);
/* Summed over the space's servers, and this client's own counts. */
typedef struct {
  uint64_t servers, capacity, bytes_in_use, high_water, pieces, versions;
  uint64_t puts, bytes_put, gets, bytes_got, batches, fused_kernels;
} axon_space_stats_t;
axon_status_t axon_space_stats(axon_space_t space, axon_space_stats_t* out);

/* The handle kernels pass to the device-callable collectives (axon::device::CollHandle of
 * axon/device/coll_types.hpp, a trivially copyable struct), copied as bytes so that this header
 * needs no device header: `out` receives AXON_DEVICE_COLL_HANDLE_BYTES bytes (out_bytes must be
 * at least that; AXON_ERR_INVALID_ARGUMENT otherwise). Copy them into an axon::device::CollHandle
 * (memcpy) and pass it to kernels by value; valid until the team is destroyed. Returns
 * AXON_ERR_UNSUPPORTED where the team has no GPU workspace (no GPU backend, a team of one PE,
 * GPUs that cannot map each other's memory) and does not span nodes (across nodes the device
 * proxy runs each call). */
#define AXON_DEVICE_COLL_HANDLE_BYTES 176
/* sizeof(axon::device::CollHandle) in the loaded library: AXON_DEVICE_COLL_HANDLE_BYTES unless the
 * program was compiled against a different axon.h. */
size_t axon_device_coll_handle_size(void);
axon_status_t axon_device_coll_handle(axon_team_t team, void* out, size_t out_bytes);

#ifdef __cplusplus
}
#endif

#endif /* AXON_AXON_H */
