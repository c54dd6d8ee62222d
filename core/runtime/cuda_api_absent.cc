// The public CUDA helpers (chorus/cuda.h) of a build without CUDA: each says
// so. A build with CUDA has ops/cuda/cuda_api.cc, in the CUDA library.
#include "chorus/cuda.h"

#include <string>

#include "chorus/status.h"

namespace chorus {

namespace {
[[noreturn]] void no_cuda(const char* function) {
  throw Error(Status::PreconditionFailed(std::string("chorus::") + function +
                                         ": this build of Chorus has no CUDA support (built with "
                                         "CHORUS_WITH_CUDA=OFF); rebuild it where the CUDA Toolkit is installed"));
}
}  // namespace

bool cuda_built() { return false; }

std::shared_ptr<const Event> cuda_event_on(void*) { no_cuda("cuda_event_on"); }

void cuda_stream_wait(void*, const std::shared_ptr<const Event>&) { no_cuda("cuda_stream_wait"); }

}  // namespace chorus
