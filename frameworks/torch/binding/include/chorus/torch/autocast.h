// Mixed precision on the CPU: autocast (LibTorch's AutocastCPU dispatch key)
// while a CpuAutocast object is alive.
//
//   {
//     chorus::torch::CpuAutocast autocast(chorus::torch::AmpMode::kBF16);
//     loss = criterion(model->forward(x), y);   // matmuls/convs in bfloat16
//   }
//   loss.backward();                           // outside, as PyTorch advises
//
// LibTorch 1.13's CPU autocast casts linear, matmul and convolution inputs
// to bfloat16 and keeps losses and reductions in float32; parameters and
// their gradients stay float32. float16 needs CPU kernels for half-precision
// matrix products, which 1.13 does not have ("addmm_impl_cpu_" not
// implemented for 'Half'): check_amp_supported() probes for them and refuses
// kFP16 with that reason where they are missing.
#pragma once

#include <string>

namespace chorus {
namespace torch {

enum class AmpMode { kOff, kBF16, kFP16 };
// "off", "bf16", "fp16"; parse_amp_mode throws chorus::Error naming the bad
// value and the accepted ones.
const char* amp_mode_name(AmpMode mode);
AmpMode parse_amp_mode(const std::string& name);

// Throws chorus::Error explaining why `mode` cannot run on the CPU with this
// LibTorch (kFP16 without half-precision CPU matmul kernels).
void check_amp_supported(AmpMode mode);

// Whether CPU autocast is on in this thread (inside a CpuAutocast region or
// one the caller opened), on every supported LibTorch version.
bool cpu_autocast_active();

// Enables CPU autocast to the mode's dtype for its lifetime (nothing for
// kOff) and restores the previous autocast state after; not copyable.
class CpuAutocast {
 public:
  explicit CpuAutocast(AmpMode mode);
  ~CpuAutocast();
  CpuAutocast(const CpuAutocast&) = delete;
  CpuAutocast& operator=(const CpuAutocast&) = delete;

 private:
  bool active_;
  bool previous_enabled_ = false;
  int previous_dtype_ = 0;  // c10::ScalarType, kept opaque to spare users the header
};

}  // namespace torch
}  // namespace chorus
