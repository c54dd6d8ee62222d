/* Collectives from C through Chorus's C API (chorus/c_api.h).
 *
 *   mpirun -np 2 c_collectives
 *
 * Each rank runs every kind of collective on small buffers whose values it
 * computes from its rank, and prints one line per result ("rank <r> <what>
 * <values>"). The values follow from the inputs alone, so another program
 * can compute the same lines (test/c/c_example_reference.py does, and the
 * suite compares). Any failure prints Chorus's text and exits with 1. */
#include <chorus/c_api.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank;
static int size;

static void check(chorus_result_t result, const char* what) {
  if (result != CHORUS_SUCCESS) {
    fprintf(stderr, "c_collectives: rank %d: %s failed: %s: %s\n", rank, what, chorus_result_string(result),
            chorus_last_error());
    exit(1);
  }
}

/* Waits for a collective; on failure prints the handle's own error text. */
static void wait_for(chorus_handle_t handle, const char* what) {
  const chorus_result_t result = chorus_handle_wait(handle);
  if (result != CHORUS_SUCCESS) {
    fprintf(stderr, "c_collectives: rank %d: %s failed: %s: %s\n", rank, what, chorus_result_string(result),
            chorus_handle_error(handle));
    exit(1);
  }
}

/* One output line, written at once so that ranks' lines do not mix. */
static char line[4096];
static size_t used;
static void start_line(const char* what) { used = (size_t)snprintf(line, sizeof line, "rank %d %s", rank, what); }
static void add(const char* format, ...) {
  va_list args;
  va_start(args, format);
  if (used < sizeof line) used += (size_t)vsnprintf(line + used, sizeof line - used, format, args);
  va_end(args);
}
static void end_line(void) {
  printf("%s\n", line);
  fflush(stdout);
}

static chorus_tensor_t host_tensor(void* data, int dtype, int ndim, const int64_t* shape) {
  chorus_tensor_t t;
  t.data = data;
  t.dtype = dtype;
  t.ndim = ndim;
  t.shape = shape;
  t.device_type = CHORUS_DEVICE_CPU;
  t.device_index = 0;
  return t;
}

static void allreduces(void) {
  /* Sum in place. */
  float x[4];
  int64_t shape4[1] = {4};
  chorus_tensor_t tx = host_tensor(x, CHORUS_FLOAT32, 1, shape4);
  chorus_options_t sum = CHORUS_OPTIONS_INITIALIZER;
  chorus_handle_t h;
  int i;
  sum.op = CHORUS_OP_SUM;
  for (i = 0; i < 4; ++i) x[i] = (float)(rank + i);
  check(chorus_allreduce_async("sum", &tx, NULL, &sum, &h), "allreduce 'sum'");
  wait_for(h, "allreduce 'sum'");
  check(chorus_handle_release(h), "release");
  start_line("allreduce_sum");
  for (i = 0; i < 4; ++i) add(" %g", x[i]);
  end_line();

  { /* Average (the default op) with a prescale factor, out of place. */
    double in[3], out[3];
    int64_t shape3[1] = {3};
    chorus_tensor_t tin = host_tensor(in, CHORUS_FLOAT64, 1, shape3);
    chorus_tensor_t tout = host_tensor(out, CHORUS_FLOAT64, 1, shape3);
    chorus_options_t scaled = CHORUS_OPTIONS_INITIALIZER;
    scaled.prescale_factor = 0.5;
    for (i = 0; i < 3; ++i) in[i] = (double)((rank + 1) * (i + 1));
    check(chorus_allreduce_async("average", &tin, &tout, &scaled, &h), "allreduce 'average'");
    wait_for(h, "allreduce 'average'");
    check(chorus_handle_release(h), "release");
    start_line("allreduce_average_prescaled");
    for (i = 0; i < 3; ++i) add(" %g", out[i]);
    end_line();
  }

  { /* Minimum of int8 values. */
    int8_t m[5];
    int64_t shape5[1] = {5};
    chorus_tensor_t tm = host_tensor(m, CHORUS_INT8, 1, shape5);
    chorus_options_t min = CHORUS_OPTIONS_INITIALIZER;
    min.op = CHORUS_OP_MIN;
    for (i = 0; i < 5; ++i) m[i] = (int8_t)((rank * 3 + i) % 5 - 2);
    check(chorus_allreduce_async("min", &tm, NULL, &min, &h), "allreduce 'min'");
    wait_for(h, "allreduce 'min'");
    check(chorus_handle_release(h), "release");
    start_line("allreduce_min");
    for (i = 0; i < 5; ++i) add(" %d", m[i]);
    end_line();
  }

  { /* A group of two tensors of different dtypes, summed as one unit. */
    int64_t a[3];
    float b[2];
    int64_t shape_a[1] = {3}, shape_b[2] = {1, 2};
    chorus_tensor_t group[2];
    group[0] = host_tensor(a, CHORUS_INT64, 1, shape_a);
    group[1] = host_tensor(b, CHORUS_FLOAT32, 2, shape_b);
    for (i = 0; i < 3; ++i) a[i] = rank * 100 + i;
    for (i = 0; i < 2; ++i) b[i] = (float)rank * 0.25f + (float)i;
    check(chorus_grouped_allreduce_async("group", 2, group, NULL, &sum, &h), "grouped allreduce 'group'");
    wait_for(h, "grouped allreduce 'group'");
    check(chorus_handle_release(h), "release");
    start_line("grouped_allreduce_sum");
    for (i = 0; i < 3; ++i) add(" %lld", (long long)a[i]);
    add(" |");
    for (i = 0; i < 2; ++i) add(" %g", b[i]);
    end_line();
  }
}

static void broadcast(void) {
  int32_t y[3];
  int64_t shape[1] = {3};
  chorus_tensor_t t = host_tensor(y, CHORUS_INT32, 1, shape);
  chorus_handle_t h;
  int i;
  for (i = 0; i < 3; ++i) y[i] = rank * 10 + i;
  check(chorus_broadcast_async("broadcast", &t, size - 1, NULL, &h), "broadcast");
  wait_for(h, "broadcast");
  check(chorus_handle_release(h), "release");
  start_line("broadcast");
  for (i = 0; i < 3; ++i) add(" %d", (int)y[i]);
  end_line();
}

/* Prints the shape and the int values of an output the handle owns. */
static void print_output(chorus_handle_t h, const char* what) {
  int64_t shape[4];
  int ndim = 0, dtype = -1, i;
  size_t bytes = 0;
  void* data = NULL;
  check(chorus_handle_output_shape(h, shape, 4, &ndim), "output shape");
  check(chorus_handle_output_dtype(h, &dtype), "output dtype");
  check(chorus_handle_output_bytes(h, &bytes), "output bytes");
  start_line(what);
  add(" shape");
  for (i = 0; i < ndim; ++i) add(" %lld", (long long)shape[i]);
  add(" values");
  if (dtype == CHORUS_INT32) {
    /* Copied out of the handle. */
    int32_t* values = malloc(bytes + 1);
    check(chorus_handle_output_copy(h, values, bytes), "output copy");
    for (i = 0; (size_t)i < bytes / sizeof(int32_t); ++i) add(" %d", (int)values[i]);
    free(values);
  } else if (dtype == CHORUS_FLOAT32) {
    /* Read in place: valid until the handle is released. */
    check(chorus_handle_output_data(h, &data), "output data");
    for (i = 0; (size_t)i < bytes / sizeof(float); ++i) add(" %g", ((const float*)data)[i]);
  } else {
    check(chorus_handle_output_data(h, &data), "output data");
    for (i = 0; (size_t)i < bytes / sizeof(int64_t); ++i) add(" %lld", (long long)((const int64_t*)data)[i]);
  }
  end_line();
}

static void allgather(void) {
  /* rank + 1 rows of 2: the output's first dimension is known only after
   * the ranks have told each other theirs. */
  int32_t rows[16][2];
  int64_t shape[2];
  chorus_tensor_t t;
  chorus_handle_t h;
  int r, c;
  shape[0] = rank + 1;
  shape[1] = 2;
  for (r = 0; r <= rank; ++r) {
    for (c = 0; c < 2; ++c) rows[r][c] = 100 * rank + 10 * r + c;
  }
  t = host_tensor(rows, CHORUS_INT32, 2, shape);
  check(chorus_allgather_async("allgather", &t, NULL, &h), "allgather");
  wait_for(h, "allgather");
  print_output(h, "allgather");
  check(chorus_handle_release(h), "release");
}

static void alltoall(void) {
  /* j + 1 rows go to rank j; each rank receives rank + 1 rows from each. */
  int64_t rows[136]; /* 16 ranks: 1 + 2 + ... + 16 */
  int64_t splits[16], received[16];
  int64_t shape[1];
  chorus_tensor_t t;
  chorus_handle_t h;
  int j, k, n = 0, count = 0;
  for (j = 0; j < size; ++j) {
    splits[j] = j + 1;
    for (k = 0; k <= j; ++k) rows[n++] = 1000 * rank + 10 * j + k;
  }
  shape[0] = n;
  t = host_tensor(rows, CHORUS_INT64, 1, shape);
  check(chorus_alltoall_async("alltoall", &t, splits, size, NULL, &h), "alltoall");
  wait_for(h, "alltoall");
  print_output(h, "alltoall");
  check(chorus_handle_received_splits(h, received, 16, &count), "received splits");
  start_line("alltoall_received_splits");
  for (j = 0; j < count; ++j) add(" %lld", (long long)received[j]);
  end_line();
  check(chorus_handle_release(h), "release");
}

static void reducescatter(void) {
  /* size + 1 rows: rank 0 gets two rows of the sum, the others one. */
  float x[17];
  int64_t shape[2];
  chorus_tensor_t t;
  chorus_handle_t h;
  int i;
  shape[0] = size + 1;
  shape[1] = 1;
  for (i = 0; i <= size; ++i) x[i] = (float)(rank * 10 + i);
  t = host_tensor(x, CHORUS_FLOAT32, 2, shape);
  /* No options: the C++ API's default op, sum. */
  check(chorus_reducescatter_async("reducescatter", &t, NULL, &h), "reducescatter");
  wait_for(h, "reducescatter");
  print_output(h, "reducescatter");
  check(chorus_handle_release(h), "release");
}

static void point_to_point(void) {
  /* Around the ring: to the next rank, from the previous one. */
  double out[2], in[2];
  int64_t shape[1] = {2};
  chorus_tensor_t tout = host_tensor(out, CHORUS_FLOAT64, 1, shape);
  chorus_tensor_t tin = host_tensor(in, CHORUS_FLOAT64, 1, shape);
  const int next = (rank + 1) % size, previous = (rank + size - 1) % size;
  chorus_handle_t sent, received;
  out[0] = rank * 7;
  out[1] = rank * 7 + 0.5;
  check(chorus_recv_async("ring", &tin, previous, &received), "recv");
  check(chorus_send_async("ring", &tout, next, &sent), "send");
  wait_for(sent, "send");
  wait_for(received, "recv");
  check(chorus_handle_release(sent), "release");
  check(chorus_handle_release(received), "release");
  start_line("recv");
  add(" from %d: %g %g", previous, in[0], in[1]);
  end_line();
}

static void process_set(void) {
  /* The even ranks; every rank adds it, only members use it. */
  int members[16], count = 0, i, set_rank = -1, set_size = 0;
  int32_t id = 0;
  for (i = 0; i < size; i += 2) members[count++] = i;
  check(chorus_add_process_set(members, count, &id), "add_process_set");
  check(chorus_process_set_rank(id, &set_rank), "process_set_rank");
  check(chorus_process_set_size(id, &set_size), "process_set_size");
  start_line("process_set");
  add(" id %d size %d rank %d", (int)id, set_size, set_rank);
  if (set_rank >= 0) {
    int32_t value = rank + 1;
    int64_t shape[1] = {1};
    chorus_tensor_t t = host_tensor(&value, CHORUS_INT32, 1, shape);
    chorus_options_t options = CHORUS_OPTIONS_INITIALIZER;
    chorus_handle_t h;
    options.op = CHORUS_OP_SUM;
    options.process_set = id;
    check(chorus_allreduce_async("even.sum", &t, NULL, &options, &h), "allreduce over the set");
    wait_for(h, "allreduce over the set");
    check(chorus_handle_release(h), "release");
    add(" sum %d", (int)value);
  }
  end_line();
  check(chorus_remove_process_set(id), "remove_process_set");
}

static void barrier_and_join(void) {
  chorus_handle_t h;
  int last = -1;
  check(chorus_barrier_async(NULL, &h), "barrier");
  wait_for(h, "barrier");
  check(chorus_handle_release(h), "release");
  check(chorus_join_async(&h), "join");
  wait_for(h, "join");
  check(chorus_handle_last_joined_rank(h, &last), "last joined rank");
  check(chorus_handle_release(h), "release");
  /* Which rank joins last depends on timing: only its range is certain. */
  start_line("join");
  add(" %s", last >= 0 && last < size ? "a rank of the job joined last" : "no rank joined last");
  end_line();
}

int main(void) {
  const uint32_t flags = chorus_build_flags();
  check(chorus_init(NULL), "chorus_init");
  check(chorus_rank(&rank), "chorus_rank");
  check(chorus_size(&size), "chorus_size");
  if (size < 2 || size > 16) {
    fprintf(stderr, "c_collectives: run it with 2 to 16 ranks (mpirun -np 2), not %d\n", size);
    chorus_shutdown();
    return 2;
  }
  if (rank == 0) {
    printf("Chorus %s (C API %d):%s%s%s%s\n", chorus_version(), chorus_c_api_version(),
           flags & CHORUS_BUILD_MPI ? " MPI" : "", flags & CHORUS_BUILD_SHARED_MEMORY ? " shared-memory" : "",
           flags & CHORUS_BUILD_CUDA ? " CUDA" : "", flags & CHORUS_BUILD_NCCL ? " NCCL" : "");
  }
  start_line("size");
  add(" %d", size);
  end_line();

  allreduces();
  broadcast();
  allgather();
  alltoall();
  reducescatter();
  point_to_point();
  process_set();
  barrier_and_join();

  check(chorus_shutdown(), "chorus_shutdown");
  return 0;
}
