#include "mlp_layout.h"

#include <cmath>
#include <random>
#include <sstream>

namespace train_mnist_cuda {

std::vector<float> initial_parameters(uint64_t seed) {
  std::vector<float> parameters(static_cast<size_t>(kParameterCount));
  std::mt19937_64 generator(seed);
  for (const ParameterSlice& slice : kParameterSlices) {
    // Biases take the bound of their layer's weight: fan_in = inputs per unit.
    const int64_t fan_in = slice.rows == 1 ? (slice.offset == kHiddenBias.offset ? kInputs : kHidden)
                                           : slice.cols;
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    for (int64_t i = 0; i < slice.count(); ++i) {
      // 53 random bits -> [0, 1): the same double on every platform.
      const double unit = static_cast<double>(generator() >> 11) * 0x1.0p-53;
      parameters[static_cast<size_t>(slice.offset + i)] = static_cast<float>((2.0 * unit - 1.0) * bound);
    }
  }
  return parameters;
}

std::string mlp_signature() {
  std::ostringstream out;
  out << "kind mlp\n";
  for (const ParameterSlice& slice : kParameterSlices) {
    out << "parameter " << slice.name;
    if (slice.rows != 1) out << " " << slice.rows;
    out << " " << slice.cols << "\n";
  }
  return out.str();
}

}  // namespace train_mnist_cuda
