// sketch::gelu (runtime/include/sketch/epilogue.cuh) on the host against an f64 reference
// (test/Runtime/gelu-accuracy.test). The device evaluates the same polynomial; its
// ex2.approx adds at most 2^-22 relative.
#include <cmath>
#include <cstdio>

#include "sketch/epilogue.cuh"

using sketch::gelu;

static double reference(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }

// The largest relative error over n + 1 points evenly spread on [lo, hi].
static double worst_relative(double lo, double hi, long n) {
  double worst = 0;
  for (long i = 0; i <= n; ++i) {
    const float x = (float)(lo + (hi - lo) * (double)i / (double)n);
    const double want = reference(x);
    if (want != 0) worst = std::fmax(worst, std::fabs(gelu(x) - want) / std::fabs(want));
  }
  return worst;
}

// The largest |error| / |x| over n + 1 points on [lo, hi].
static double worst_absolute(double lo, double hi, long n) {
  double worst = 0;
  for (long i = 0; i <= n; ++i) {
    const float x = (float)(lo + (hi - lo) * (double)i / (double)n);
    if (x != 0) worst = std::fmax(worst, std::fabs(gelu(x) - reference(x)) / std::fabs(x));
  }
  return worst;
}

int main() {
  const double relative = worst_relative(-5.0, 14.0, 2000000);
  const double near_zero = worst_relative(-1.0, 1.0, 2000000);
  const double absolute = worst_absolute(-40.0, 40.0, 2000000);
  const bool specials = std::isnan(gelu(NAN)) && gelu(INFINITY) == INFINITY &&
                        gelu(0.0f) == 0.0f && std::fabs(gelu(-30.0f)) < 1e-6f &&
                        gelu(30.0f) == 30.0f;
  std::printf("relative error on [-5, 14]: %.2e, on [-1, 1]: %.2e; |error| / |x| on [-40, 40]: %.2e\n",
              relative, near_zero, absolute);
  const bool ok = relative < 4e-6 && near_zero < 5e-7 && absolute < 2e-7 && specials;
  std::printf("gelu accuracy: %s\n", ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}
