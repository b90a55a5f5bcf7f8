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
// A unary op 16 lanes at a time (VEXPR of the f16u x), the tail element by element (EXPR of the
// float x), then the clamp.
#define UNARY16(NAME, VEXPR, EXPR)                                                                 \
  __kernel void NAME(__global const float* restrict X, __global float* restrict O, const int n,    \
                     const int chunk, const float lo, const float hi) {                            \
    const int c0 = get_global_id(0) * chunk;                                                       \
    const int c1 = c0 + chunk < n ? c0 + chunk : n;                                                \
    int i = c0;                                                                                    \
    for (; i + 16 <= c1; i += 16) {                                                                \
      const f16u x = LOAD16(X + i);                                                                \
      STORE16(O + i, clamp16(VEXPR, lo, hi));                                                      \
    }                                                                                              \
    for (; i < c1; i++) { const float x = X[i]; const float v = EXPR; O[i] = CLAMP(v); }           \
  }
// LOGISTIC: TFLite's reference formula, 16 lanes at a time with common.cl's logistic16 (the
// formula an epilogue's folded swish uses too), the tail through the builtin exp.
UNARY16(logistic, logistic16(x),
        x > LOGISTIC_HIGH ? 1.0f : (x < LOGISTIC_LOW ? exp(x) : 1.0f / (1.0f + exp(-x))))

// tanh, 16 lanes at a time (the builtin is a call per element on PyPI's PoCL: 22 ns each):
// x Q(x^2) for |x| <= 0.625 (Q: degree 5, a least-squares fit of tanh(x) / x for relative error,
// 1.5e-7 in float), else sign(x) (1 - 2 / (e^(2|x|) + 1)) with exp16_small (2|x| capped at 16.5:
// within 1 ulp of 1 from there), exactly +-1 beyond 9.1 (where tanh rounds to 1); NaN stays NaN.
inline f16u tanh16(f16u x) {
  const f16u a = fabs(x);
  const f16u s = x * x;
  f16u q = -0.0057595898f;
  q = q * s + 0.020680638f;
  q = q * s - 0.053749017f;
  q = q * s + 0.13331479f;
  q = q * s - 0.33333275f;
  q = q * s + 1.0f;
  const f16u e = exp16_small(2.0f * (a > 8.25f ? (f16u)(8.25f) : a));
  const f16u big = copysign(a > 9.1f ? (f16u)(1.0f) : 1.0f - 2.0f / (e + 1.0f), x);
  return a <= 0.625f ? q * x : (x != x ? x : big);
}

// erfc(a) e^(a^2) for a >= 0 as t P(t), t = 1 / (1 + a / 2): P of degree 9, a least-squares fit
// for relative error over a in [0, 10] (3.2e-7 evaluated in float).
inline f16u erfc_scaled16(f16u a) {
  const f16u t = 1.0f / (1.0f + 0.5f * a);
  f16u p = 0.0072186836f;
  p = p * t - 0.098310985f;
  p = p * t + 0.37625661f;
  p = p * t - 0.6076364f;
  p = p * t + 0.37575918f;
  p = p * t - 0.07718144f;
  p = p * t + 0.21931553f;
  p = p * t + 0.23976354f;
  p = p * t + 0.28274602f;
  p = p * t + 0.28206915f;
  return p * t;
}

// GELU, TFLite's formula 0.5 x erfc(-x / sqrt 2), 16 lanes at a time (the builtin erfc, a call
// per element, ran at 0.2-1 GB/s in a transformer): with z = -x / sqrt 2, erfc(|z|) =
// e^(-z^2) erfc_scaled16(|z|) (0 where z^2 > 87: |GELU| < 1e-37 there), and erfc(z) = 2 - erfc(-z)
// for z < 0; infinities and NaN come out as the formula gives them. z^2 = x^2 / 2 is taken from x
// itself, exactly: x = h + l with h x's top 12 significant bits, so h^2 / 2 is a float and the
// rest, r = h l + l^2 / 2 (|r| < 0.05 where it matters), goes through e^-r's Taylor polynomial
// (a rounded z^2 near 80 would cost e^(-z^2) 1e-5 of relative accuracy).
inline f16u gelu16(f16u x) {
  const f16u z = x * -0.70710678118654752f;
  const f16u h = AS_F16(AS_U16(x) & 0xfffff000u), l = x - h;
  const f16u q = 0.5f * (h * h), r = l * (h + 0.5f * l);
  const f16u e_r = 1.0f - r * (1.0f - r * (0.5f - r * (1.0f / 6.0f)));
  const f16u tail = q > 87.0f ? (f16u)(0.0f) : exp16_small(-q) * e_r * erfc_scaled16(fabs(z));
  return 0.5f * x * (z < 0.0f ? 2.0f - tail : tail);
}

UNARY16(tanh_, tanh16(x), tanh(x))
UNARY16(gelu, gelu16(x), 0.5f * x * erfc(x * -0.70710678118654752f))
// the formula of common.cl's hard_swish16 (an epilogue's folded HARD_SWISH)
UNARY(hard_swish, x * ((x + 3.0f) < 0.0f ? 0.0f : ((x + 3.0f) > 6.0f ? 6.0f : (x + 3.0f))) / 6.0f)
