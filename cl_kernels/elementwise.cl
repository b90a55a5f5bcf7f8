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
// LOGISTIC: TFLite's reference formula, 16 lanes at a time with common.cl's logistic16 (the
// formula an epilogue's folded swish uses too), the tail through the builtin exp.
__kernel void logistic(__global const float* restrict X, __global float* restrict O, const int n,
                       const int chunk, const float lo, const float hi) {
  const int c0 = get_global_id(0) * chunk;
  const int c1 = c0 + chunk < n ? c0 + chunk : n;
  int i = c0;
  for (; i + 16 <= c1; i += 16) STORE16(O + i, clamp16(logistic16(LOAD16(X + i)), lo, hi));
  for (; i < c1; i++) {
    const float x = X[i];
    const float v = x > LOGISTIC_HIGH ? 1.0f : (x < LOGISTIC_LOW ? exp(x) : 1.0f / (1.0f + exp(-x)));
    O[i] = CLAMP(v);
  }
}
UNARY(tanh_, tanh(x))
// the formula of common.cl's hard_swish16 (an epilogue's folded HARD_SWISH)
UNARY(hard_swish, x * ((x + 3.0f) < 0.0f ? 0.0f : ((x + 3.0f) > 6.0f ? 6.0f : (x + 3.0f))) / 6.0f)
