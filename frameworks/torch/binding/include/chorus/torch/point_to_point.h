// Point-to-point on LibTorch tensors (chorus.h's send_async/recv_async):
// a named tensor straight to one rank, without negotiation. Between two
// ranks, messages of one name arrive in the order sent. The receiver's
// tensor must have the dtype and shape that was sent, else the handle fails
// naming both ranks and both dtypes and shapes. Host (CPU) tensors only.
//
// The TorchHandle keeps the tensors alive until done. A non-contiguous
// tensor is sent from a contiguous copy; one received into is received into
// a contiguous copy that wait() copies back, like the in-place collectives.
#pragma once

#include <string>

#include <torch/types.h>

#include "chorus/torch/ops.h"

namespace chorus {
namespace torch {

// wait() returns `tensor`.
TorchHandle send_async(const ::torch::Tensor& tensor, int dest_rank, const std::string& name);
// wait() returns `into`, holding what was received.
TorchHandle recv_async(const ::torch::Tensor& into, int source_rank, const std::string& name);
void send(const ::torch::Tensor& tensor, int dest_rank, const std::string& name);
void recv(const ::torch::Tensor& into, int source_rank, const std::string& name);

}  // namespace torch
}  // namespace chorus
