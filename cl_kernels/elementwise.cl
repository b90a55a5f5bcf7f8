// Float32 elementwise kernels (binary ops, activations) whose sizes, strides and clamp bounds
// arrive as kernel ARGUMENTS: one program serves every shape (a build costs ~0.4 s cold; these ops
// are cheap, so specialising them on shape macros would cost more in builds than it saves).
//
// Work split (host: teflon_py.opencl.kernels.row_blocks): rows of `inner` elements; a work-item
// takes `rpi` whole rows, or one `chunk`-long piece of one long row. Global size
// (pieces, row blocks), local 1x1. Clamps are ternaries (see common.cl): lo/hi = -inf/+inf when
// unbounded, and NaN passes through as in TFLite's ActivationFunctionWithMinMax.

#define CLAMP(v) ((v) < lo ? lo : ((v) > hi ? hi : (v)))

// out = clamp(EXPR(x, y)) with numpy broadcasting, collapsed on the host to at most four outer
// dimensions (d0 implied by the row count) and an inner one read with stride 1 or 0 per operand.
#define BINARY(NAME, EXPR)                                                                          \
  __kernel void NAME(__global const float* restrict A, __global const float* restrict B,          \
                     __global float* restrict O, const int rows, const int rpi, const int inner,    \
                     const int chunk, const int sa_in, const int sb_in, const int d1, const int d2, \
                     const int d3, const int sa0, const int sa1, const int sa2, const int sa3,      \
                     const int sb0, const int sb1, const int sb2, const int sb3, const float lo,    \
                     const float hi) {                                                              \
    const int c0 = get_global_id(0) * chunk;                                                        \
    const int c1 = c0 + chunk < inner ? c0 + chunk : inner;                                         \
    const int r0 = get_global_id(1) * rpi;                                                          \
    const int r1 = r0 + rpi < rows ? r0 + rpi : rows;                                               \
    for (int r = r0; r < r1; r++) {                                                                 \
      int q = r;                                                                                    \
      const int i3 = q % d3; q /= d3;                                                               \
      const int i2 = q % d2; q /= d2;                                                               \
      const int i1 = q % d1; const int i0 = q / d1;                                                 \
      const __global float* a = A + i0 * sa0 + i1 * sa1 + i2 * sa2 + i3 * sa3;                      \
      const __global float* b = B + i0 * sb0 + i1 * sb1 + i2 * sb2 + i3 * sb3;                      \
      __global float* o = O + r * inner;                                                            \
      if (sa_in && sb_in) {                                                                         \
        for (int i = c0; i < c1; i++) { const float x = a[i], y = b[i]; const float v = EXPR; o[i] = CLAMP(v); } \
      } else if (sb_in) {                                                                           \
        const float x = a[0];                                                                       \
        for (int i = c0; i < c1; i++) { const float y = b[i]; const float v = EXPR; o[i] = CLAMP(v); } \
      } else if (sa_in) {                                                                           \
        const float y = b[0];                                                                       \
        for (int i = c0; i < c1; i++) { const float x = a[i]; const float v = EXPR; o[i] = CLAMP(v); } \
      } else {                                                                                      \
        const float x = a[0], y = b[0]; const float v = EXPR;                                       \
        for (int i = c0; i < c1; i++) o[i] = CLAMP(v);                                              \
      }                                                                                             \
    }                                                                                               \
  }

BINARY(add, x + y)
BINARY(sub, x - y)
BINARY(mul, x * y)

// out[i] = clamp(EXPR(x)) over n elements; a work-item takes one `chunk`. Global (ceil(n/chunk)).
#define UNARY(NAME, EXPR)                                                                           \
  __kernel void NAME(__global const float* restrict X, __global float* restrict O, const int n,     \
                     const int chunk, const float lo, const float hi) {                            \
    const int c0 = get_global_id(0) * chunk;                                                        \
    const int c1 = c0 + chunk < n ? c0 + chunk : n;                                                 \
    for (int i = c0; i < c1; i++) { const float x = X[i]; const float v = EXPR; O[i] = CLAMP(v); }  \
  }

// TFLite's reference formulas; exp/tanh are the accurate builtins (no relaxed math: <= 4 ulp).
UNARY(clip, x)
#define LOGISTIC_LOW -9.0f
#define LOGISTIC_HIGH 16.619047164916992188f

// e^x for x in [-87, 16.7], 16 lanes at a time, within ~2 ulp of expf (the float ops' bar is a
// relative L2 error of 1e-5): x = n ln2 + r with |r| <= ln2 / 2 (n rounded to nearest by the
// 1.5 * 2^23 trick, ln2 in two parts), e^r by its degree-7 Taylor polynomial (truncation below
// 6e-9), times 2^n built in the exponent bits. The builtin exp is a call per element on PyPI's
// PoCL, which does not inline builtins: EfficientNet's swish LOGISTICs ran at 0.8 GB/s.
inline f16u exp16_small(f16u x) {
  const f16u t = x * 1.44269504088896341f;
  const f16u n = (t + 12582912.0f) - 12582912.0f;
  const f16u r = (x - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;
  f16u p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * AS_F16((CVT_I16(n) + 127) << 23);
}

// LOGISTIC: TFLite's reference formula (1 above LOGISTIC_HIGH, e^x below LOGISTIC_LOW, else
// 1 / (1 + e^-x)), 16 lanes at a time with exp16_small (0 below -87, where expf's results are
// subnormal), the tail and NaNs (which take no branch's compare) through the builtin.
__kernel void logistic(__global const float* restrict X, __global float* restrict O, const int n,
                       const int chunk, const float lo, const float hi) {
  const int c0 = get_global_id(0) * chunk;
  const int c1 = c0 + chunk < n ? c0 + chunk : n;
  int i = c0;
  for (; i + 16 <= c1; i += 16) {
    const f16u x = LOAD16(X + i);
    const f16u low = x < (f16u)(LOGISTIC_LOW) ? (f16u)(1.0f) : (f16u)(0.0f);
    const f16u arg = low != 0.0f ? (x < -87.0f ? (f16u)(-87.0f) : x) : (x > 87.0f ? (f16u)(87.0f) : -x);
    const f16u e = exp16_small(arg);
    f16u v = low != 0.0f ? (x < -87.0f ? (f16u)(0.0f) : e) : 1.0f / (1.0f + e);
    v = x > (f16u)(LOGISTIC_HIGH) ? (f16u)(1.0f) : v;
    v = x != x ? x : v;  // NaN
    v = v < (f16u)(lo) ? (f16u)(lo) : v;
    STORE16(O + i, v > (f16u)(hi) ? (f16u)(hi) : v);
  }
  for (; i < c1; i++) {
    const float x = X[i];
    const float v = x > LOGISTIC_HIGH ? 1.0f : (x < LOGISTIC_LOW ? exp(x) : 1.0f / (1.0f + exp(-x)));
    O[i] = CLAMP(v);
  }
}
UNARY(tanh_, tanh(x))
UNARY(hard_swish, x * ((x + 3.0f) < 0.0f ? 0.0f : ((x + 3.0f) > 6.0f ? 6.0f : (x + 3.0f))) / 6.0f)
