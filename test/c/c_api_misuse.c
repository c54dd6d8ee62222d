/* The C API misused from C (C99): every mistake gets a result code and a
 * text naming it, never a crash or a hang. Run at np=2 under mpirun (the
 * collectives that fail on a handle need a peer):
 *   calls before chorus_init() and after chorus_shutdown(); NULL pointers
 *   (buffer, tensor, name, handle, results, group arrays, timeline path);
 *   unknown and reserved dtype and reduce-op codes; negative ndim and sizes;
 *   empty and negative group counts; non-finite scale factors; options not
 *   set up by their initializer; options a collective does not take;
 *   handles that are unknown, released, released twice or still in
 *   progress; results asked of a handle that has none, or of a group member
 *   that does not exist; a timeline stopped when none runs; a collective
 *   that fails on every rank.
 * Prints each failed expectation and exits with the number of failures. */
#include <chorus/c_api.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static int failures;
static int checks;
static int rank = -1;

/* `result` must be `code`, and the thread's last error must contain `text`. */
static void expect(chorus_result_t result, chorus_result_t code, const char* text, const char* what) {
  ++checks;
  if (result != code) {
    ++failures;
    fprintf(stderr, "rank %d: %s: got %s (%s), expected %s\n", rank, what, chorus_result_string(result),
            chorus_last_error(), chorus_result_string(code));
    return;
  }
  if (code != CHORUS_SUCCESS && strstr(chorus_last_error(), text) == NULL) {
    ++failures;
    fprintf(stderr, "rank %d: %s: the text '%s' does not contain '%s'\n", rank, what, chorus_last_error(), text);
  }
}

static void expect_text(const char* actual, const char* text, const char* what) {
  ++checks;
  if (actual == NULL || strstr(actual, text) == NULL) {
    ++failures;
    fprintf(stderr, "rank %d: %s: the text '%s' does not contain '%s'\n", rank, what, actual ? actual : "(NULL)",
            text);
  }
}

static void expect_true(int condition, const char* what) {
  ++checks;
  if (!condition) {
    ++failures;
    fprintf(stderr, "rank %d: %s does not hold\n", rank, what);
  }
}

static chorus_tensor_t tensor(void* data, int dtype, int ndim, const int64_t* shape) {
  chorus_tensor_t t;
  t.data = data;
  t.dtype = dtype;
  t.ndim = ndim;
  t.shape = shape;
  t.device_type = CHORUS_DEVICE_CPU;
  t.device_index = 0;
  return t;
}

static void before_init(void) {
  float x[4] = {0};
  int64_t shape[1] = {4};
  chorus_tensor_t t = tensor(x, CHORUS_FLOAT32, 1, shape);
  chorus_handle_t h = 42;
  int value = -1;
  chorus_init_options_t bad_init = CHORUS_INIT_OPTIONS_INITIALIZER;

  expect_true(chorus_is_initialized() == 0, "not initialized before chorus_init");
  expect(chorus_rank(&value), CHORUS_ERROR_PRECONDITION, "Chorus is not initialized", "chorus_rank before init");
  expect(chorus_allreduce_async("x", &t, NULL, NULL, &h), CHORUS_ERROR_PRECONDITION, "Chorus is not initialized",
         "allreduce before init");
  expect_true(h == CHORUS_HANDLE_NULL, "a failed submission sets *handle to CHORUS_HANDLE_NULL");
  expect(chorus_barrier_async(NULL, &h), CHORUS_ERROR_PRECONDITION, "Chorus is not initialized",
         "barrier before init");
  expect(chorus_process_set_size(0, &value), CHORUS_ERROR_PRECONDITION, "Chorus is not initialized",
         "process set size before init");
  expect(chorus_grouped_allgather_async("g", 1, &t, NULL, &h), CHORUS_ERROR_PRECONDITION,
         "Chorus is not initialized", "grouped allgather before init");
  expect(chorus_start_timeline("trace.json", 0), CHORUS_ERROR_PRECONDITION, "Chorus is not initialized",
         "start_timeline before init");
  expect(chorus_stop_timeline(), CHORUS_ERROR_PRECONDITION, "Chorus is not initialized",
         "stop_timeline before init");
  expect(chorus_handle_wait(12345), CHORUS_ERROR_INVALID_HANDLE, "handle 12345 was never returned by Chorus",
         "wait on a made-up handle");
  expect(chorus_handle_release(CHORUS_HANDLE_NULL), CHORUS_ERROR_INVALID_HANDLE, "is CHORUS_HANDLE_NULL",
         "release of CHORUS_HANDLE_NULL");
  expect(chorus_rank(NULL), CHORUS_ERROR_INVALID_ARGUMENT, "chorus_rank: the result pointer is NULL",
         "chorus_rank(NULL)");
  expect(chorus_shutdown(), CHORUS_SUCCESS, "", "chorus_shutdown before init does nothing");

  /* Options that no initializer set up, or malformed lists. */
  bad_init.magic = 0;
  expect(chorus_init(&bad_init), CHORUS_ERROR_INVALID_ARGUMENT,
         "was not set up with CHORUS_INIT_OPTIONS_INITIALIZER", "init options without the initializer");
  bad_init.magic = CHORUS_OPTIONS_MAGIC;
  bad_init.size = 4;
  expect(chorus_init(&bad_init), CHORUS_ERROR_INVALID_ARGUMENT, "has size 4", "init options too short");
  bad_init.size = sizeof bad_init;
  bad_init.num_process_sets = -1;
  expect(chorus_init(&bad_init), CHORUS_ERROR_INVALID_ARGUMENT, "num_process_sets is -1",
         "negative number of process sets");
  bad_init.num_process_sets = 1;
  expect(chorus_init(&bad_init), CHORUS_ERROR_INVALID_ARGUMENT, "process_set_sizes is NULL",
         "process sets without sizes");
  expect_true(chorus_is_initialized() == 0, "a refused init leaves Chorus uninitialized");

  /* Every code has a text; an unknown one says so. */
  expect_text(chorus_result_string(CHORUS_ERROR_INVALID_HANDLE), "CHORUS_ERROR_INVALID_HANDLE",
              "chorus_result_string(CHORUS_ERROR_INVALID_HANDLE)");
  expect_text(chorus_result_string(CHORUS_ERROR_UNSUPPORTED), "not supported by this build",
              "chorus_result_string(CHORUS_ERROR_UNSUPPORTED)");
  expect_text(chorus_result_string((chorus_result_t)99), "unknown chorus_result_t value",
              "chorus_result_string(99)");
}

/* Arguments the C layer or the C++ API refuses at submission. */
static void bad_arguments(void) {
  float x[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4}, negative[2] = {2, -3};
  chorus_tensor_t t = tensor(x, CHORUS_FLOAT32, 1, shape), bad;
  chorus_options_t options = CHORUS_OPTIONS_INITIALIZER;
  chorus_handle_t h = 7;

  bad = tensor(NULL, CHORUS_FLOAT32, 1, shape);
  expect(chorus_allreduce_async("null.buffer", &bad, NULL, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "'null.buffer': input has 4 elements but no memory (data is null)", "NULL buffer");
  expect_true(h == CHORUS_HANDLE_NULL, "a refused submission sets *handle to CHORUS_HANDLE_NULL");
  bad = tensor(x, 42, 1, shape);
  expect(chorus_allreduce_async("dtype.42", &bad, NULL, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "chorus_allreduce_async: 'dtype.42': input has unknown dtype code 42; expected one of CHORUS_UINT8 (0)",
         "unknown dtype code");
  /* 16-bit integers are dtypes like the others: the C++ API's own check
   * of the buffer is what refuses these. */
  bad = tensor(NULL, CHORUS_INT16, 1, shape);
  expect(chorus_allgather_async("int16", &bad, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "'int16': input has 4 elements but no memory (data is null)", "int16 without a buffer");
  bad = tensor(NULL, CHORUS_UINT16, 1, shape);
  expect(chorus_broadcast_async("uint16", &bad, 0, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "'uint16': tensor has 4 elements but no memory (data is null)", "uint16 without a buffer");
  bad = tensor(x, CHORUS_FLOAT32, 2, negative);
  expect(chorus_allreduce_async("negative", &bad, NULL, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "'negative': input has shape [2, -3]; dimensions must be >= 0", "negative size");
  bad = tensor(x, CHORUS_FLOAT32, -1, shape);
  expect(chorus_allreduce_async("ndim", &bad, NULL, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "'ndim': input has ndim -1; expected 0 or more", "negative ndim");
  bad = tensor(x, CHORUS_FLOAT32, 2, NULL);
  expect(chorus_allreduce_async("shape", &bad, NULL, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "'shape': input has ndim 2 but its shape is NULL", "NULL shape");
  bad = tensor(x, CHORUS_FLOAT32, 1, shape);
  bad.device_type = 9;
  expect(chorus_allreduce_async("device", &bad, NULL, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "input has unknown device_type 9; expected CHORUS_DEVICE_CPU (0) or CHORUS_DEVICE_CUDA (1)",
         "unknown device type");
  expect(chorus_allreduce_async("null.tensor", NULL, NULL, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "chorus_allreduce_async: 'null.tensor': input is NULL", "NULL tensor");
  expect(chorus_allreduce_async(NULL, &t, NULL, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "chorus_allreduce_async: name is NULL", "NULL name");
  expect(chorus_allreduce_async("no.handle", &t, NULL, NULL, NULL), CHORUS_ERROR_INVALID_ARGUMENT,
         "chorus_allreduce_async: handle is NULL", "NULL handle pointer");
  expect(chorus_allreduce_async("", &t, NULL, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "A collective needs a non-empty name", "empty name");

  options.op = 17;
  expect(chorus_allreduce_async("op.17", &t, NULL, &options, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "'op.17': unknown reduce op code 17", "unknown reduce op");
  options.op = CHORUS_OP_ADASUM;
  expect(chorus_reducescatter_async("adasum", &t, &options, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "'adasum': reducescatter does not support reduce op adasum (an allreduce op)", "Adasum on reducescatter");
  options.op = CHORUS_OP_SUM;
  expect(chorus_allgather_async("gather.sum", &t, &options, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "'gather.sum': allgather takes no reduce op (options->op is 0); expected CHORUS_OP_DEFAULT (-1)",
         "a reduce op on allgather");
  options.op = CHORUS_OP_DEFAULT;
  /* Reducescatter takes factors: the C++ API checks them. */
  options.postscale_factor = HUGE_VAL;
  expect(chorus_reducescatter_async("scatter.inf", &t, &options, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "'scatter.inf': postscale factor is inf; it must be finite", "an infinite factor on reducescatter");
  options.postscale_factor = 1.0;
  options.prescale_factor = 2.0;
  expect(chorus_broadcast_async("broadcast.scaled", &t, 0, &options, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "broadcast takes no scale factor (options->prescale_factor is 2.000000); expected 1.0",
         "a factor on broadcast");
  memset(&options, 0, sizeof options);
  expect(chorus_allreduce_async("zeroed.options", &t, NULL, &options, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "the chorus_options_t was not set up with CHORUS_OPTIONS_INITIALIZER (its magic is 0x0",
         "zeroed options");

  expect(chorus_grouped_allreduce_async("group", -1, &t, NULL, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "'group': count is -1", "negative group count");
  expect(chorus_grouped_allreduce_async("group", 0, NULL, NULL, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "grouped allreduce got 0 inputs and 0 outputs", "empty group");
  expect(chorus_grouped_allgather_async("group", 2, NULL, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "chorus_grouped_allgather_async: inputs is NULL", "grouped allgather of a NULL array");
  expect(chorus_grouped_reducescatter_async("group", 2, NULL, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "chorus_grouped_reducescatter_async: inputs is NULL", "grouped reducescatter of a NULL array");
  expect(chorus_grouped_allgather_async("group", 0, NULL, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "'group': grouped allgather got no inputs; expected at least one", "empty grouped allgather");
  expect(chorus_grouped_reducescatter_async("group", 0, &t, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "'group': grouped reducescatter got no inputs; expected at least one", "empty grouped reducescatter");
  expect(chorus_grouped_reducescatter_async("group", -2, &t, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "chorus_grouped_reducescatter_async: 'group': count is -2; expected 1 or more",
         "negative grouped reducescatter count");
  expect(chorus_grouped_allgather_async(NULL, 1, &t, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "chorus_grouped_allgather_async: name is NULL", "grouped allgather without a name");
  expect(chorus_grouped_allgather_async("group", 1, &t, NULL, NULL), CHORUS_ERROR_INVALID_ARGUMENT,
         "chorus_grouped_allgather_async: handle is NULL", "grouped allgather without a handle pointer");
  {
    chorus_tensor_t members[2];
    members[0] = t;
    members[1] = tensor(x, 42, 1, shape);
    expect(chorus_grouped_allgather_async("group", 2, members, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
           "chorus_grouped_allgather_async: 'group': inputs[1] has unknown dtype code 42", "a bad group member");
    options = (chorus_options_t)CHORUS_OPTIONS_INITIALIZER;
    options.op = CHORUS_OP_MIN;
    expect(chorus_grouped_allgather_async("group", 1, members, &options, &h), CHORUS_ERROR_INVALID_ARGUMENT,
           "'group': allgather takes no reduce op (options->op is 2)", "a reduce op on grouped allgather");
    options.op = CHORUS_OP_DEFAULT;
    options.prescale_factor = NAN;
    expect(chorus_grouped_reducescatter_async("group", 1, members, &options, &h), CHORUS_ERROR_INVALID_ARGUMENT,
           "'group.0': prescale factor is nan; it must be finite", "a NaN factor on grouped reducescatter");
  }
  expect(chorus_start_timeline(NULL, 0), CHORUS_ERROR_INVALID_ARGUMENT, "chorus_start_timeline: path is NULL",
         "start_timeline without a path");
  expect(chorus_alltoall_async("splits", &t, NULL, 2, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "chorus_alltoall_async: splits is NULL", "NULL splits");
  expect(chorus_broadcast_async("root", &t, 99, NULL, &h), CHORUS_ERROR_INVALID_ARGUMENT,
         "'root': root rank 99 is out of range", "root out of range");
  expect(chorus_send_async("self", &t, rank, &h), CHORUS_ERROR_INVALID_ARGUMENT, "is this rank itself",
         "send to itself");
  {
    int ranks[1] = {5};
    int32_t id = 0;
    expect(chorus_add_process_set(ranks, -1, &id), CHORUS_ERROR_INVALID_ARGUMENT, "count is -1",
           "negative process set count");
    expect(chorus_process_set_size(77, &ranks[0]), CHORUS_ERROR_INVALID_ARGUMENT, "77",
           "size of a set that does not exist");
  }
}

/* Handles used wrongly. */
static void bad_handles(int size) {
  float x[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4}, one[1] = {1}, two[1] = {2}, small[1];
  chorus_tensor_t t = tensor(x, CHORUS_FLOAT32, 1, shape);
  chorus_handle_t h, late = CHORUS_HANDLE_NULL;
  int done = -1, ndim = -1;
  const char* error;

  /* Done, released, then used. */
  expect(chorus_allreduce_async("released", &t, NULL, NULL, &h), CHORUS_SUCCESS, "", "allreduce");
  expect(chorus_handle_wait(h), CHORUS_SUCCESS, "", "wait");
  expect_text(chorus_handle_error(h), "", "a succeeded handle has no error");
  expect_true(chorus_handle_error(h)[0] == '\0', "a succeeded handle's error is empty");
  expect(chorus_handle_output_shape(h, small, 1, &ndim), CHORUS_ERROR_INVALID_ARGUMENT,
         "chorus_handle_output_shape applies to allgather, alltoall and reducescatter handles, not to 'released' "
         "(allreduce)",
         "the output of an allreduce handle");
  expect(chorus_handle_last_joined_rank(h, &done), CHORUS_ERROR_INVALID_ARGUMENT,
         "applies to join handles, not to 'released' (allreduce)", "the last joined rank of an allreduce");
  expect(chorus_handle_output_count(h, &done), CHORUS_ERROR_INVALID_ARGUMENT,
         "chorus_handle_output_count applies to allgather, alltoall and reducescatter (grouped or not) handles, "
         "not to 'released' (allreduce)",
         "the output count of an allreduce handle");
  expect(chorus_handle_release(h), CHORUS_SUCCESS, "", "release");
  expect(chorus_handle_wait(h), CHORUS_ERROR_INVALID_HANDLE,
         "chorus_handle_wait: handle", "wait on a released handle");
  expect_text(chorus_last_error(), "was released (chorus_handle_release); it cannot be used after that",
              "the released handle's text");
  expect(chorus_handle_test(h, &done), CHORUS_ERROR_INVALID_HANDLE, "was released", "test on a released handle");
  expect(chorus_handle_release(h), CHORUS_ERROR_INVALID_HANDLE, "was released", "double release");
  error = chorus_handle_error(h);
  expect_text(error, "chorus_handle_error: handle", "the error text of a released handle");
  expect_text(error, "was released", "the error text of a released handle");

  /* An output handle asked too much. */
  expect(chorus_allgather_async("gathered", &t, NULL, &h), CHORUS_SUCCESS, "", "allgather");
  expect(chorus_handle_wait(h), CHORUS_SUCCESS, "", "wait for allgather");
  expect(chorus_handle_output_shape(h, NULL, 0, &ndim), CHORUS_SUCCESS, "", "ask the output's ndim");
  expect_true(ndim == 1, "the allgather output has one dimension");
  expect(chorus_handle_output_copy(h, x, sizeof x), CHORUS_ERROR_INVALID_ARGUMENT,
         "chorus_handle_output_copy: capacity 16 bytes is less than the output's", "copy into too little memory");
  expect(chorus_handle_output_data(h, NULL), CHORUS_ERROR_INVALID_ARGUMENT, "data is NULL", "output data NULL");
  expect(chorus_handle_received_splits(h, NULL, 0, &done), CHORUS_ERROR_INVALID_ARGUMENT,
         "applies to alltoall handles, not to 'gathered' (allgather)", "received splits of an allgather");
  expect(chorus_handle_wait_timeout(h, -5), CHORUS_ERROR_INVALID_ARGUMENT, "timeout_ms is -5", "negative timeout");
  expect(chorus_handle_release(h), CHORUS_SUCCESS, "", "release allgather");

  /* A group's outputs: by member only, and only the members there are. */
  {
    chorus_tensor_t members[2];
    int count = -1;
    size_t bytes = 0;
    members[0] = t;
    members[1] = t;
    expect(chorus_grouped_allgather_async("group.gathered", 2, members, NULL, &h), CHORUS_SUCCESS, "",
           "grouped allgather");
    expect(chorus_handle_wait(h), CHORUS_SUCCESS, "", "wait for the grouped allgather");
    expect(chorus_handle_output_count(h, &count), CHORUS_SUCCESS, "", "the group's output count");
    expect_true(count == 2, "a group of two has two outputs");
    expect(chorus_handle_output_count(h, NULL), CHORUS_ERROR_INVALID_ARGUMENT,
           "chorus_handle_output_count: count is NULL", "output count into NULL");
    expect(chorus_handle_output_bytes_member(h, 1, &bytes), CHORUS_SUCCESS, "", "member 1's bytes");
    expect_true(bytes == sizeof x * (size_t)size, "member 1 holds every rank's 4 floats");
    expect(chorus_handle_output_copy_member(h, 2, x, sizeof x), CHORUS_ERROR_INVALID_ARGUMENT,
           "chorus_handle_output_copy_member: member 2 is out of range: 'group.gathered' has 2 output(s); "
           "expected 0 to 1",
           "member 2 of 2");
    expect(chorus_handle_output_shape_member(h, -1, NULL, 0, &ndim), CHORUS_ERROR_INVALID_ARGUMENT,
           "member -1 is out of range", "member -1");
    expect(chorus_handle_output_dtype_member(h, 0, NULL), CHORUS_ERROR_INVALID_ARGUMENT,
           "chorus_handle_output_dtype_member: dtype is NULL", "member dtype into NULL");
    expect(chorus_handle_output_copy_member(h, 0, x, sizeof x), CHORUS_ERROR_INVALID_ARGUMENT,
           "chorus_handle_output_copy_member: capacity 16 bytes is less than the output's",
           "copy a member into too little memory");
    expect(chorus_handle_output_shape(h, NULL, 0, &ndim), CHORUS_ERROR_INVALID_ARGUMENT,
           "chorus_handle_output_shape applies to a single collective's handle, not to group 'group.gathered' "
           "(grouped allgather): use chorus_handle_output_shape_member",
           "the single output of a group");
    expect(chorus_handle_release(h), CHORUS_SUCCESS, "", "release the grouped allgather");
    expect(chorus_handle_output_bytes_member(h, 0, &bytes), CHORUS_ERROR_INVALID_HANDLE, "was released",
           "a member of a released group");
  }

  /* Timeline control is collective: every rank gets the same errors. */
  expect(chorus_stop_timeline(), CHORUS_ERROR_PRECONDITION,
         "stop_timeline(): no timeline is being written; start one with start_timeline() or CHORUS_TIMELINE",
         "stop_timeline with none running");
  expect(chorus_start_timeline("", 1), CHORUS_ERROR_INVALID_ARGUMENT,
         "start_timeline(): the path is empty; expected the file that rank 0 writes the trace to",
         "start_timeline with an empty path");

  /* A collective that fails on every rank: the handle keeps its text. */
  if (size >= 2) {
    chorus_tensor_t mismatched = tensor(x, CHORUS_FLOAT32, 1, rank == 0 ? one : two);
    expect(chorus_allreduce_async("mismatch", &mismatched, NULL, NULL, &h), CHORUS_SUCCESS, "",
           "submit a mismatched allreduce");
    expect(chorus_handle_wait(h), CHORUS_ERROR_MISMATCH, "Mismatched shape for allreduce 'mismatch'",
           "wait for a mismatched allreduce");
    expect_text(chorus_handle_error(h), "Mismatched shape for allreduce 'mismatch': rank 0 has [1], rank 1 has [2]",
                "the failed handle's text");
    expect(chorus_handle_status(h), CHORUS_ERROR_MISMATCH, "Mismatched shape", "status of a failed handle");
    expect(chorus_handle_release(h), CHORUS_SUCCESS, "", "release of a failed handle");

    /* Still in progress: rank 0 waits for a message that rank 1 sends only
     * after rank 0 has checked. */
    if (rank == 0) {
      expect(chorus_recv_async("late", &t, 1, &late), CHORUS_SUCCESS, "", "post a receive");
      expect(chorus_handle_test(late, &done), CHORUS_SUCCESS, "", "test");
      expect_true(done == 0, "the receive is not done before its message was sent");
      expect(chorus_handle_status(late), CHORUS_IN_PROGRESS, "still in progress", "status in progress");
      expect(chorus_handle_wait_timeout(late, 10), CHORUS_IN_PROGRESS, "still in progress", "wait 10 ms");
      expect(chorus_handle_release(late), CHORUS_IN_PROGRESS,
             "chorus_handle_release: 'late'", "release of an unfinished handle");
      expect_text(chorus_last_error(), "is still in progress; wait for it first", "the unfinished handle's text");
    }
    expect(chorus_barrier_async(NULL, &h), CHORUS_SUCCESS, "", "barrier");
    expect(chorus_handle_wait(h), CHORUS_SUCCESS, "", "wait for the barrier");
    expect(chorus_handle_release(h), CHORUS_SUCCESS, "", "release the barrier");
    if (rank == 1) {
      expect(chorus_send_async("late", &t, 0, &late), CHORUS_SUCCESS, "", "send");
    }
    if (rank <= 1) {
      expect(chorus_handle_wait(late), CHORUS_SUCCESS, "", "the late transfer");
      expect(chorus_handle_release(late), CHORUS_SUCCESS, "", "release the late transfer");
    }
  }
}

int main(void) {
  int size = 0;
  chorus_handle_t kept;
  float x[1] = {1};
  int64_t shape[1] = {1};
  chorus_tensor_t t = tensor(x, CHORUS_FLOAT32, 1, shape);

  before_init();
  expect(chorus_init(NULL), CHORUS_SUCCESS, "", "chorus_init");
  expect(chorus_rank(&rank), CHORUS_SUCCESS, "", "chorus_rank");
  expect(chorus_size(&size), CHORUS_SUCCESS, "", "chorus_size");
  expect(chorus_init(NULL), CHORUS_SUCCESS, "", "a second chorus_init does nothing");
  bad_arguments();
  bad_handles(size);

  /* A handle kept across shutdown can still be read and released. */
  expect(chorus_allreduce_async("kept", &t, NULL, NULL, &kept), CHORUS_SUCCESS, "", "allreduce before shutdown");
  expect(chorus_handle_wait(kept), CHORUS_SUCCESS, "", "wait before shutdown");
  expect(chorus_shutdown(), CHORUS_SUCCESS, "", "chorus_shutdown");
  expect(chorus_shutdown(), CHORUS_SUCCESS, "", "chorus_shutdown twice");
  expect_true(chorus_is_initialized() == 0, "not initialized after shutdown");
  expect(chorus_size(&size), CHORUS_ERROR_PRECONDITION, "Chorus has been shut down", "chorus_size after shutdown");
  expect(chorus_handle_status(kept), CHORUS_SUCCESS, "", "a done handle after shutdown");
  expect(chorus_handle_release(kept), CHORUS_SUCCESS, "", "release after shutdown");
  expect(chorus_allreduce_async("after", &t, NULL, NULL, &kept), CHORUS_ERROR_PRECONDITION,
         "Chorus has been shut down", "allreduce after shutdown");
  /* The first handle this process got ("released", in bad_handles). */
  expect(chorus_handle_release(1), CHORUS_ERROR_INVALID_HANDLE, "handle 1 was released", "an old handle");

  if (failures == 0) printf("c_api_misuse: rank %d: all %d checks passed\n", rank, checks);
  return failures;
}
