#include "support/adasum_reference.h"

#include <cfloat>
#include <cmath>
#include <cstddef>

namespace chorus_test {
namespace {

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

bool negligible(double squared_norm) { return squared_norm < std::sqrt(DBL_MIN); }

// The paper's combination of two gradients.
std::vector<double> combine(const std::vector<double>& a, const std::vector<double>& b) {
  const double ab = dot(a, b);
  const double aa = dot(a, a);
  const double bb = dot(b, b);
  const double ca = negligible(aa) ? 1.0 : 1.0 - ab / (2.0 * aa);
  const double cb = negligible(bb) ? 1.0 : 1.0 - ab / (2.0 * bb);
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = ca * a[i] + cb * b[i];
  return out;
}

std::vector<double> reduce(const std::vector<std::vector<double>>& grads, size_t begin, size_t end) {
  if (end - begin == 1) return grads[begin];
  const size_t middle = begin + (end - begin) / 2;
  return combine(reduce(grads, begin, middle), reduce(grads, middle, end));
}

// One node of the tree: its exact value and a bound on the 2-norm of the
// error of the computed one.
struct Node {
  std::vector<double> value;
  double error = 0.0;
};

// The combination f(a, b) = a + b - (a.b)/2 (a/|a|^2 + b/|b|^2) moves by at
// most (1.5 + 2 rho) |da| + (1.5 + 2/rho) |db| when a and b move by da and
// db (rho = |b|/|a|; from its derivatives: the term (a.b) a/|a|^2 changes by
// at most 4 rho |da| + |db|). Each level also rounds every element of the
// result once (at most u |v| in 2-norm) and computes the coefficients from
// dot products accumulated in double over n elements (each off by at most
// about n 2^-53 |a| |b|, moving the result by at most 4 (n + 8) 2^-53
// (|a| + |b|); the 8 covers the sums over the ranks). A side with a
// negligible norm has coefficient 1, and the other's too (their dot product
// is negligible): the tests' zero gradients are exact zeros, which stay so.
Node bound(const std::vector<std::vector<double>>& grads, size_t begin, size_t end, double u) {
  if (end - begin == 1) return {grads[begin], 0.0};
  const size_t middle = begin + (end - begin) / 2;
  const Node a = bound(grads, begin, middle, u);
  const Node b = bound(grads, middle, end, u);
  Node out{combine(a.value, b.value), 0.0};
  const double na = std::sqrt(dot(a.value, a.value));
  const double nb = std::sqrt(dot(b.value, b.value));
  const double n = static_cast<double>(a.value.size());
  const double propagated = negligible(na * na) || negligible(nb * nb)
                                ? a.error + b.error
                                : (1.5 + 2.0 * nb / na) * a.error + (1.5 + 2.0 * na / nb) * b.error;
  out.error = propagated + u * std::sqrt(dot(out.value, out.value)) + 4.0 * (n + 8.0) * 0x1p-53 * (na + nb);
  return out;
}

}  // namespace

std::vector<double> adasum_reference(const std::vector<std::vector<double>>& grads) {
  return reduce(grads, 0, grads.size());
}

double adasum_tolerance(const std::vector<std::vector<double>>& grads, double u) {
  return bound(grads, 0, grads.size(), u).error;
}

}  // namespace chorus_test
