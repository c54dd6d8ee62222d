/* Chorus's C API: the runtime from C (C99), and the layer that bindings for
 * other languages (Python, Fortran, Julia, Rust) sit on.
 *
 * Rules that hold for every function:
 * - Nothing throws or aborts: a function that can fail returns a
 *   chorus_result_t; CHORUS_SUCCESS (0) means it did what it says.
 * - Every call that returns another code leaves a text saying what was wrong
 *   in chorus_last_error() (per thread), e.g. "'grad': input has shape [2, -3];
 *   dimensions must be >= 0". The texts are the C++ API's (docs/CONVENTIONS.md).
 * - Collectives are asynchronous: they return a handle (an integer id, never
 *   0 and never reused) that the caller tests or waits for and then releases.
 *   Buffers stay the caller's and must stay valid and untouched until the
 *   handle is done.
 * - Names, ranks and the meaning of every option are those of the C++ API
 *   (chorus/chorus.h, chorus/process_set.h); this header says only what
 *   differs or is C's own.
 * - Enumerations travel as int (in structs and arguments) so that their size
 *   is the same in every compiler and language; their values never change.
 *
 *   #include <chorus/c_api.h>
 *   chorus_init(NULL);
 *   float grad[4] = {1, 2, 3, 4};
 *   int64_t shape[1] = {4};
 *   chorus_tensor_t t = {grad, CHORUS_FLOAT32, 1, shape, CHORUS_DEVICE_CPU, 0};
 *   chorus_options_t sum = CHORUS_OPTIONS_INITIALIZER;
 *   sum.op = CHORUS_OP_SUM;
 *   chorus_handle_t h;
 *   if (chorus_allreduce_async("grad", &t, NULL, &sum, &h) != CHORUS_SUCCESS ||
 *       chorus_handle_wait(h) != CHORUS_SUCCESS) {
 *     fprintf(stderr, "%s\n", chorus_last_error());
 *   }
 *   chorus_handle_release(h);
 *   chorus_shutdown();
 *
 * Link with the shared library libchorus_c (CMake: Chorus::c; pkg-config:
 * chorus-c). */
#ifndef CHORUS_C_API_H
#define CHORUS_C_API_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define CHORUS_C_EXPORT __attribute__((visibility("default")))
#else
#define CHORUS_C_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header's interface; it grows when functions or option
 * fields are added (old programs keep working: see the options structs).
 * 2 added int16/uint16, scale factors on reducescatter, grouped allgather
 * and reducescatter with their per-member outputs, and the timeline. */
#define CHORUS_C_API_VERSION 2

/* ------------------------------------------------------------------------ */
/* Result codes (stable values).                                            */

typedef enum chorus_result {
  CHORUS_SUCCESS = 0,
  CHORUS_ERROR_INVALID_ARGUMENT = 1, /* bad input: buffer, dtype, shape, name, option */
  CHORUS_ERROR_MISMATCH = 2,         /* ranks disagree about a collective */
  CHORUS_ERROR_PRECONDITION = 3,     /* called before chorus_init() or after chorus_shutdown() */
  CHORUS_ERROR_SHUTDOWN = 4,         /* the runtime was shut down (here or by a peer) */
  CHORUS_ERROR_TIMEOUT = 5,          /* a deadline of the runtime passed */
  CHORUS_ERROR_ABORTED = 6,          /* the runtime stopped because of an earlier error */
  CHORUS_ERROR_INTERNAL = 7,         /* MPI or another library failed */
  CHORUS_IN_PROGRESS = 8,            /* the collective has not finished yet */
  CHORUS_ERROR_INVALID_HANDLE = 9,   /* a handle that was released or never returned */
  CHORUS_ERROR_UNSUPPORTED = 10,     /* a valid code that this build of Chorus does not support */
  CHORUS_ERROR_OUT_OF_MEMORY = 11
} chorus_result_t;

/* "CHORUS_ERROR_MISMATCH: ranks disagree about a collective"; never NULL. */
CHORUS_C_EXPORT const char* chorus_result_string(chorus_result_t result);
/* The text of the last call on this thread that returned a code other than
 * CHORUS_SUCCESS ("" if none); valid until this thread's next such call. */
CHORUS_C_EXPORT const char* chorus_last_error(void);

/* A collective in flight, or done and not yet released: an id that is never
 * 0 and never reused in the process, so a released handle is refused
 * (CHORUS_ERROR_INVALID_HANDLE) rather than confused with another. */
typedef uint64_t chorus_handle_t;
#define CHORUS_HANDLE_NULL ((chorus_handle_t)0)

/* ------------------------------------------------------------------------ */
/* Element types, reduce operations, devices (stable values).               */

typedef enum chorus_dtype {
  CHORUS_UINT8 = 0,
  CHORUS_INT8 = 1,
  CHORUS_INT32 = 2,
  CHORUS_INT64 = 3,
  CHORUS_FLOAT16 = 4,
  CHORUS_BFLOAT16 = 5,
  CHORUS_FLOAT32 = 6,
  CHORUS_FLOAT64 = 7,
  CHORUS_BOOL = 8, /* one byte per element; broadcast and allgather only */
  CHORUS_INT16 = 9,  /* 16-bit integers: NCCL does not reduce them (as in Horovod) */
  CHORUS_UINT16 = 10
} chorus_dtype_t;

typedef enum chorus_reduce_op {
  CHORUS_OP_DEFAULT = -1, /* allreduce: average; reducescatter: sum (the C++ API's defaults) */
  CHORUS_OP_SUM = 0,
  CHORUS_OP_AVERAGE = 1,
  CHORUS_OP_MIN = 2,
  CHORUS_OP_MAX = 3,
  CHORUS_OP_PRODUCT = 4,
  CHORUS_OP_ADASUM = 5 /* allreduce only: floating-point CPU tensors, a set whose size is a power of two */
} chorus_reduce_op_t;

typedef enum chorus_device_type {
  CHORUS_DEVICE_CPU = 0, /* host memory; device_index 0 */
  CHORUS_DEVICE_CUDA = 1 /* this rank's GPU (see chorus::supports in chorus.h) */
} chorus_device_type_t;

/* A non-owning description of contiguous memory, as chorus::Tensor.
 * Zero-initialised, it is a uint8 scalar in host memory whose data is still
 * to be set. */
typedef struct chorus_tensor {
  void* data;           /* may be NULL only when the tensor has no elements */
  int dtype;            /* chorus_dtype_t */
  int ndim;             /* >= 0; 0 is a scalar (one element) */
  const int64_t* shape; /* ndim sizes, each >= 0; may be NULL when ndim is 0 */
  int device_type;      /* chorus_device_type_t */
  int device_index;
} chorus_tensor_t;

/* ------------------------------------------------------------------------ */
/* Versioned options (as NCCL's ncclConfig_t): always start from the         */
/* initializer, then set fields. `size`, `magic` and `version` let a newer   */
/* library read an older program's struct (it reads only the fields that     */
/* fit in `size`) and refuse one that was never initialised.                 */

#define CHORUS_OPTIONS_MAGIC 0x43484f52u /* "CHOR" */

typedef struct chorus_options {
  size_t size;          /* sizeof(chorus_options_t) */
  unsigned int magic;   /* CHORUS_OPTIONS_MAGIC */
  unsigned int version; /* CHORUS_C_API_VERSION */
  int op;               /* chorus_reduce_op_t: allreduce and reducescatter, grouped or not */
  double prescale_factor;  /* allreduce and reducescatter, grouped or not (1.0: none) */
  double postscale_factor; /* allreduce and reducescatter, grouped or not (1.0: none) */
  int32_t process_set;     /* every collective but join: 0 is the global set */
} chorus_options_t;

#define CHORUS_OPTIONS_INITIALIZER \
  { sizeof(chorus_options_t), CHORUS_OPTIONS_MAGIC, CHORUS_C_API_VERSION, CHORUS_OP_DEFAULT, 1.0, 1.0, 0 }

/* Static process sets made by chorus_init(): set i (id i + 1) has the
 * process_set_sizes[i] ranks that follow the earlier sets' ranks in
 * process_set_ranks. Every rank passes the same lists. */
typedef struct chorus_init_options {
  size_t size;          /* sizeof(chorus_init_options_t) */
  unsigned int magic;   /* CHORUS_OPTIONS_MAGIC */
  unsigned int version; /* CHORUS_C_API_VERSION */
  int num_process_sets;
  const int* process_set_sizes; /* num_process_sets entries */
  const int* process_set_ranks; /* the sum of process_set_sizes entries */
} chorus_init_options_t;

#define CHORUS_INIT_OPTIONS_INITIALIZER \
  { sizeof(chorus_init_options_t), CHORUS_OPTIONS_MAGIC, CHORUS_C_API_VERSION, 0, NULL, NULL }

/* ------------------------------------------------------------------------ */
/* The library and the job.                                                 */

/* CHORUS_C_API_VERSION of the library (may be newer than the header's). */
CHORUS_C_EXPORT int chorus_c_api_version(void);
/* The package's version, "0.1.0". */
CHORUS_C_EXPORT const char* chorus_version(void);

/* What this build has (chorusrun --check-build lists the same). */
#define CHORUS_BUILD_MPI (1u << 0)           /* always: the MPI controller and backend */
#define CHORUS_BUILD_SHARED_MEMORY (1u << 1) /* always: allreduce among a host's ranks */
#define CHORUS_BUILD_CUDA (1u << 2)          /* GPU memory (through host memory without NCCL) */
#define CHORUS_BUILD_NCCL (1u << 3)          /* the NCCL backend for GPU memory */
#define CHORUS_BUILD_GLOO (1u << 4)          /* never: Chorus has no Gloo controller */
#define CHORUS_BUILD_TORCH (1u << 5)         /* the package has the LibTorch front end (C++) */
CHORUS_C_EXPORT uint32_t chorus_build_flags(void);

/* chorus::init(): initialises MPI unless the program did (then with
 * MPI_THREAD_MULTIPLE). options may be NULL. Calling it again while running
 * does nothing. */
CHORUS_C_EXPORT chorus_result_t chorus_init(const chorus_init_options_t* options);
/* Safe to call twice; handles stay valid (and must still be released). */
CHORUS_C_EXPORT chorus_result_t chorus_shutdown(void);
/* 1 between chorus_init() and chorus_shutdown(), else 0. */
CHORUS_C_EXPORT int chorus_is_initialized(void);

CHORUS_C_EXPORT chorus_result_t chorus_rank(int* rank);
CHORUS_C_EXPORT chorus_result_t chorus_size(int* size);
CHORUS_C_EXPORT chorus_result_t chorus_local_rank(int* local_rank);
CHORUS_C_EXPORT chorus_result_t chorus_local_size(int* local_size);
CHORUS_C_EXPORT chorus_result_t chorus_cross_rank(int* cross_rank);
CHORUS_C_EXPORT chorus_result_t chorus_cross_size(int* cross_size);

/* ------------------------------------------------------------------------ */
/* Process sets (chorus/process_set.h). Array results (here and on handles): */
/* pass a NULL array and capacity 0 to learn *count; a capacity below the    */
/* count fails with CHORUS_ERROR_INVALID_ARGUMENT and writes only *count.     */

/* Collective over every rank of the job. */
CHORUS_C_EXPORT chorus_result_t chorus_add_process_set(const int* ranks, int count, int32_t* id);
CHORUS_C_EXPORT chorus_result_t chorus_remove_process_set(int32_t id);
/* The set's ranks in ascending order. */
CHORUS_C_EXPORT chorus_result_t chorus_process_set_ranks(int32_t id, int* ranks, int capacity, int* count);
/* This rank's index among the set's ranks, or -1 when it is not a member. */
CHORUS_C_EXPORT chorus_result_t chorus_process_set_rank(int32_t id, int* rank);
CHORUS_C_EXPORT chorus_result_t chorus_process_set_size(int32_t id, int* size);
/* The ids of the sets that exist now, 0 (the global set) first. */
CHORUS_C_EXPORT chorus_result_t chorus_process_sets(int32_t* ids, int capacity, int* count);

/* ------------------------------------------------------------------------ */
/* Collectives. `options` may be NULL (CHORUS_OPTIONS_INITIALIZER's values); */
/* an option the collective does not take must keep its initial value. On    */
/* success *handle is the new handle; on failure it is 0.                    */

/* output NULL (or the same memory as input): in place. */
CHORUS_C_EXPORT chorus_result_t chorus_allreduce_async(const char* name, const chorus_tensor_t* input,
                                                       const chorus_tensor_t* output,
                                                       const chorus_options_t* options, chorus_handle_t* handle);
/* count tensors negotiated and fused as one unit (member i is named
 * name + "." + i); outputs NULL: in place. One handle for the group. */
CHORUS_C_EXPORT chorus_result_t chorus_grouped_allreduce_async(const char* name, int count,
                                                               const chorus_tensor_t* inputs,
                                                               const chorus_tensor_t* outputs,
                                                               const chorus_options_t* options,
                                                               chorus_handle_t* handle);
/* The output (every rank's input along the first dimension) belongs to the
 * handle: see chorus_handle_output_*. */
CHORUS_C_EXPORT chorus_result_t chorus_allgather_async(const char* name, const chorus_tensor_t* input,
                                                       const chorus_options_t* options, chorus_handle_t* handle);
/* root_rank is a rank of the job (a member of options->process_set). */
CHORUS_C_EXPORT chorus_result_t chorus_broadcast_async(const char* name, const chorus_tensor_t* inout, int root_rank,
                                                       const chorus_options_t* options, chorus_handle_t* handle);
/* splits[i] first-dimension rows go to the set's i-th rank; num_splits 0
 * (splits NULL): equal parts. The output and the rows received from each
 * rank belong to the handle (chorus_handle_output_*,
 * chorus_handle_received_splits). */
CHORUS_C_EXPORT chorus_result_t chorus_alltoall_async(const char* name, const chorus_tensor_t* input,
                                                      const int64_t* splits, int num_splits,
                                                      const chorus_options_t* options, chorus_handle_t* handle);
/* The output (this rank's rows of the reduction) belongs to the handle. */
CHORUS_C_EXPORT chorus_result_t chorus_reducescatter_async(const char* name, const chorus_tensor_t* input,
                                                           const chorus_options_t* options,
                                                           chorus_handle_t* handle);
/* Grouped forms, as chorus_grouped_allreduce_async: count tensors
 * negotiated as one unit (member i is named name + "." + i; a mismatch in
 * any fails the whole group on every rank) and fused where they fit. One
 * handle owns every member's output: chorus_handle_output_*_member. */
CHORUS_C_EXPORT chorus_result_t chorus_grouped_allgather_async(const char* name, int count,
                                                               const chorus_tensor_t* inputs,
                                                               const chorus_options_t* options,
                                                               chorus_handle_t* handle);
CHORUS_C_EXPORT chorus_result_t chorus_grouped_reducescatter_async(const char* name, int count,
                                                                   const chorus_tensor_t* inputs,
                                                                   const chorus_options_t* options,
                                                                   chorus_handle_t* handle);
CHORUS_C_EXPORT chorus_result_t chorus_barrier_async(const chorus_options_t* options, chorus_handle_t* handle);
/* The last rank to join: chorus_handle_last_joined_rank. */
CHORUS_C_EXPORT chorus_result_t chorus_join_async(chorus_handle_t* handle);
/* Point-to-point, outside the negotiation (host memory only); the receiver
 * gives the dtype and shape the sender sent. */
CHORUS_C_EXPORT chorus_result_t chorus_send_async(const char* name, const chorus_tensor_t* tensor, int dest_rank,
                                                  chorus_handle_t* handle);
CHORUS_C_EXPORT chorus_result_t chorus_recv_async(const char* name, const chorus_tensor_t* tensor, int source_rank,
                                                  chorus_handle_t* handle);

/* ------------------------------------------------------------------------ */
/* The timeline at run time (chorus::start_timeline, chorus::stop_timeline). */
/* Blocking and collective over the job: every rank calls them with the same */
/* arguments; rank 0 writes the Chrome trace of the collectives negotiated   */
/* in between (with CYCLE_START markers when mark_cycles is not 0) to path.  */

CHORUS_C_EXPORT chorus_result_t chorus_start_timeline(const char* path, int mark_cycles);
/* Rank 0's file is complete once this returns on any rank. */
CHORUS_C_EXPORT chorus_result_t chorus_stop_timeline(void);

/* ------------------------------------------------------------------------ */
/* Handles.                                                                 */

/* *done = 1 once the collective finished (successfully or not), else 0;
 * never blocks. */
CHORUS_C_EXPORT chorus_result_t chorus_handle_test(chorus_handle_t handle, int* done);
/* CHORUS_IN_PROGRESS while it runs, then its result; never blocks. */
CHORUS_C_EXPORT chorus_result_t chorus_handle_status(chorus_handle_t handle);
/* Blocks until it is done; returns its result. */
CHORUS_C_EXPORT chorus_result_t chorus_handle_wait(chorus_handle_t handle);
/* As chorus_handle_wait, for at most timeout_ms (>= 0) milliseconds:
 * CHORUS_IN_PROGRESS when it is still running then. */
CHORUS_C_EXPORT chorus_result_t chorus_handle_wait_timeout(chorus_handle_t handle, int64_t timeout_ms);
/* Frees the handle and the output it owns. Only once it is done: an
 * unfinished one is kept (CHORUS_IN_PROGRESS), since Chorus still uses its
 * buffers. Releasing it again: CHORUS_ERROR_INVALID_HANDLE. */
CHORUS_C_EXPORT chorus_result_t chorus_handle_release(chorus_handle_t handle);
/* Why the collective failed ("" while it runs or when it succeeded); valid
 * until the handle is released. For an unknown or released handle, the
 * text saying so. Never NULL. */
CHORUS_C_EXPORT const char* chorus_handle_error(chorus_handle_t handle);

/* The output that an allgather, alltoall or reducescatter handle owns, once
 * it has succeeded (until then, the collective's result). It lies on the
 * input's device. A grouped handle has one per member: the _member forms
 * below. */
CHORUS_C_EXPORT chorus_result_t chorus_handle_output_dtype(chorus_handle_t handle, int* dtype);
/* The array rule of process sets: (NULL, 0) asks for *ndim only. */
CHORUS_C_EXPORT chorus_result_t chorus_handle_output_shape(chorus_handle_t handle, int64_t* shape, int capacity,
                                                           int* ndim);
CHORUS_C_EXPORT chorus_result_t chorus_handle_output_bytes(chorus_handle_t handle, size_t* bytes);
/* The output's memory, valid until the handle is released. */
CHORUS_C_EXPORT chorus_result_t chorus_handle_output_data(chorus_handle_t handle, void** data);
/* Copies the output (host memory) into dest, which holds capacity bytes. */
CHORUS_C_EXPORT chorus_result_t chorus_handle_output_copy(chorus_handle_t handle, void* dest, size_t capacity);
/* The number of outputs: the members of a grouped allgather or
 * reducescatter, 1 for the collectives above. */
CHORUS_C_EXPORT chorus_result_t chorus_handle_output_count(chorus_handle_t handle, int* count);
/* As the forms above, for member `member` (0 to count - 1; of a single
 * collective, 0). */
CHORUS_C_EXPORT chorus_result_t chorus_handle_output_dtype_member(chorus_handle_t handle, int member, int* dtype);
CHORUS_C_EXPORT chorus_result_t chorus_handle_output_shape_member(chorus_handle_t handle, int member, int64_t* shape,
                                                                  int capacity, int* ndim);
CHORUS_C_EXPORT chorus_result_t chorus_handle_output_bytes_member(chorus_handle_t handle, int member, size_t* bytes);
CHORUS_C_EXPORT chorus_result_t chorus_handle_output_data_member(chorus_handle_t handle, int member, void** data);
CHORUS_C_EXPORT chorus_result_t chorus_handle_output_copy_member(chorus_handle_t handle, int member, void* dest,
                                                                 size_t capacity);
/* alltoall: the rows received from each of the set's ranks (count: the
 * set's size). */
CHORUS_C_EXPORT chorus_result_t chorus_handle_received_splits(chorus_handle_t handle, int64_t* splits,
                                                              int capacity, int* count);
/* join: the last rank that joined. */
CHORUS_C_EXPORT chorus_result_t chorus_handle_last_joined_rank(chorus_handle_t handle, int* rank);

#ifdef __cplusplus
}
#endif

#endif /* CHORUS_C_API_H */
