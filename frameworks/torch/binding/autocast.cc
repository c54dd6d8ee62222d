// CpuAutocast and the float16 probe (see chorus/torch/autocast.h).
#include "chorus/torch/autocast.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "chorus/chorus.h"

namespace chorus {
namespace torch {

const char* amp_mode_name(AmpMode mode) {
  switch (mode) {
    case AmpMode::kOff: return "off";
    case AmpMode::kBF16: return "bf16";
    case AmpMode::kFP16: return "fp16";
  }
  return "unknown";
}

AmpMode parse_amp_mode(const std::string& name) {
  for (AmpMode m : {AmpMode::kOff, AmpMode::kBF16, AmpMode::kFP16}) {
    if (name == amp_mode_name(m)) return m;
  }
  throw Error(Status::InvalidArgument("amp mode '" + name + "' is invalid: expected one of off, bf16, fp16"));
}

void check_amp_supported(AmpMode mode) {
  if (mode != AmpMode::kFP16) return;
  // Autocast would send every linear layer through a half-precision addmm:
  // try one (a 1x1 product is enough to hit the kernel's dtype dispatch).
  try {
    const auto half = ::torch::ones({1, 1}, ::torch::kHalf);
    (void)::torch::addmm(half, half, half);
  } catch (const std::exception& e) {
    std::string reason = e.what();
    reason = reason.substr(0, reason.find('\n'));
    throw Error(Status::InvalidArgument(
        "amp fp16 is not supported on the CPU with this LibTorch (" TORCH_VERSION "): its CPU kernels "
        "have no float16 matrix product (" + reason + "); expected --amp bf16 (bfloat16 autocast, "
        "float32 range) or --amp off on the CPU"));
  }
}

// LibTorch 2.4 generalised the autocast state to one API per device type
// and deprecated the CPU-specific functions that 1.13 offers (later releases
// drop them), so the CPU state is read and set through whichever this
// LibTorch has.
namespace {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool cpu_autocast_enabled() { return at::autocast::is_autocast_enabled(at::kCPU); }
void set_cpu_autocast_enabled(bool enabled) { at::autocast::set_autocast_enabled(at::kCPU, enabled); }
at::ScalarType cpu_autocast_dtype() { return at::autocast::get_autocast_dtype(at::kCPU); }
void set_cpu_autocast_dtype(at::ScalarType dtype) { at::autocast::set_autocast_dtype(at::kCPU, dtype); }
#else
bool cpu_autocast_enabled() { return at::autocast::is_cpu_enabled(); }
void set_cpu_autocast_enabled(bool enabled) { at::autocast::set_cpu_enabled(enabled); }
at::ScalarType cpu_autocast_dtype() { return at::autocast::get_autocast_cpu_dtype(); }
void set_cpu_autocast_dtype(at::ScalarType dtype) { at::autocast::set_autocast_cpu_dtype(dtype); }
#endif
}  // namespace

bool cpu_autocast_active() { return cpu_autocast_enabled(); }

CpuAutocast::CpuAutocast(AmpMode mode) : active_(mode != AmpMode::kOff) {
  if (!active_) return;
  previous_enabled_ = cpu_autocast_enabled();
  previous_dtype_ = static_cast<int>(cpu_autocast_dtype());
  set_cpu_autocast_enabled(true);
  set_cpu_autocast_dtype(mode == AmpMode::kBF16 ? at::kBFloat16 : at::kHalf);
  at::autocast::increment_nesting();
}

CpuAutocast::~CpuAutocast() {
  if (!active_) return;
  // As torch.autocast's __exit__: the cast-weight cache lives until the
  // outermost region ends.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_cpu_autocast_enabled(previous_enabled_);
  set_cpu_autocast_dtype(static_cast<at::ScalarType>(previous_dtype_));
}

}  // namespace torch
}  // namespace chorus
