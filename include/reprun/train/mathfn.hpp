// Own exp, log and tanh built from +, *, fused multiply-add and exact operations (ldexp, frexp,
// floor). Nothing from libm's transcendental functions reaches the weights, so a libc upgrade or
// another vendor's libm cannot change a bit. Accuracy is a few ulp, which training does not notice.
#pragma once

namespace reprun::mathfn {

double exp(double x);
double log(double x);
float tanh(float x);

} // namespace reprun::mathfn
