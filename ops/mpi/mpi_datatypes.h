// MpiTypes: the MPI datatypes and reduce ops for every chorus dtype.
//
// Built-in MPI types and ops cover the integer and float32/float64 dtypes.
// MPI has no float16/bfloat16, so both travel as a committed 2-byte
// contiguous type, and sum/min/max/product on them are user-defined
// commutative MPI ops that call reduce_into (computing in float32). MPI user
// functions receive no context pointer, so each (dtype, op) pair gets its own
// function, instantiated from one template.
//
// 8- and 16-bit integer sums are user-defined ops too: Open MPI 4.1's AVX op component
// sums 8- and 16-bit integers with saturating instructions in its vector
// loop but wraps in its scalar tail (open-mpi/ompi#8045, "wontfix"), so an
// overflowing MPI_SUM gives results that depend on the element's position.
// reduce_into wraps everywhere, like every other path of the runtime.
//
// The owner creates one MpiTypes after MPI_Init and destroys it before
// MPI_Finalize; there is no global instance.
#pragma once

#include <mpi.h>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

// Status::Internal("<call> failed: <MPI error string>") for a failed MPI
// return code, OK for MPI_SUCCESS. Shared by the MPI backend's files.
Status mpi_status(const char* call, int rc);

class MpiTypes {
 public:
  MpiTypes() = default;
  ~MpiTypes();
  MpiTypes(const MpiTypes&) = delete;
  MpiTypes& operator=(const MpiTypes&) = delete;

  // Commits the half-precision datatype and creates the user-defined ops.
  // Calling it again while created is a no-op. On failure, whatever was
  // created is freed again.
  Status create();
  // Frees what create() made. Safe to call twice, without create(), and
  // after MPI_Finalize (then MPI already released everything).
  void destroy();
  bool created() const { return created_; }

  // The MPI datatype of one element of `dtype`. MPI_DATATYPE_NULL for
  // float16/bfloat16 before create() and for an invalid dtype.
  MPI_Datatype datatype(DataType dtype) const;
  // The MPI op that reduces `dtype` with `op`. MPI_OP_NULL for kAverage,
  // for bool, and for the user-defined ones before create().
  MPI_Op op(DataType dtype, ReduceOp op) const;

  // float16 and bfloat16 x sum, min, max, product; int8, uint8, int16 and
  // uint16 x sum.
  static constexpr int kNumUserOps = 12;

 private:
  bool created_ = false;
  MPI_Datatype half_type_ = MPI_DATATYPE_NULL;
  // Indexed like the table of user functions in mpi_datatypes.cc.
  MPI_Op user_ops_[kNumUserOps] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL,
                                   MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
};

}  // namespace chorus
