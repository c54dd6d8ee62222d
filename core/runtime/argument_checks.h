// Checks of the public API's arguments, before anything is enqueued. Each
// failure is an InvalidArgument that names the tensor, what was wrong and
// what was expected.
#pragma once

#include <string>
#include <vector>

#include "chorus/chorus.h"

namespace chorus {

Status check_name(const std::string& name);
// dtype known, dims non-negative, memory present when there are elements.
Status check_tensor(const std::string& name, const char* role, const Tensor& tensor);
Status check_allreduce(const std::string& name, const Tensor& input, const Tensor& output,
                       const AllreduceOptions& options);
// Adasum (op kAdasum) over `size` ranks of `process_set`: a power of two.
Status check_adasum_ranks(const std::string& name, ReduceOp op, int32_t process_set, int size);
// At least one dimension (the one that is gathered, split or scattered).
Status check_has_first_dim(const std::string& name, const char* op, const Tensor& tensor);
Status check_root(const std::string& name, int root, int size);
// Fills `splits` with equal parts when it is empty.
Status check_alltoall_splits(const std::string& name, const Tensor& input, int size,
                             std::vector<int64_t>* splits);
Status check_reducescatter(const std::string& name, const Tensor& input, const ReducescatterOptions& options);

}  // namespace chorus
