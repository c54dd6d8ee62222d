// The Adasum reference of the tests, written from the paper (Maleki et al.,
// "Scaling Distributed Training with Adaptive Summation", MLSys 2021), not
// from Chorus's implementation: the pairwise adaptive sum
//     a' = (1 - a.b / (2|a|^2)) a + (1 - a.b / (2|b|^2)) b
// applied recursively to the ranks in order (each half of the ranks reduced
// on its own, then the two results combined), in double precision. A side
// whose squared norm is below sqrt(DBL_MIN) keeps coefficient 1, as in
// Horovod (a zero gradient leaves the other unchanged).
#pragma once

#include <cstdint>
#include <vector>

namespace chorus_test {

// grads[r]: rank r's gradient; every one of the same length, and a
// power-of-two number of them.
std::vector<double> adasum_reference(const std::vector<std::vector<double>>& grads);

// The largest difference between an Adasum result computed with unit
// roundoff `u` (2^-24 for float32 arithmetic, 2^-53 for float64) and the
// reference, for the gradients `grads` (adasum_tolerance's derivation is in
// adasum_reference.cc). Holds on any CPU: it bounds roundings, whatever
// their order.
double adasum_tolerance(const std::vector<std::vector<double>>& grads, double u);

}  // namespace chorus_test
