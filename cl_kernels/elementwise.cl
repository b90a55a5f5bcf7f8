// Float32 elementwise and data-movement kernels whose sizes, strides and clamp bounds arrive as
// kernel ARGUMENTS: one program serves every shape (a build costs ~0.4 s cold; these ops are
// cheap, so specialising them on shape macros would cost more in builds than it saves).
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
UNARY(logistic, x > 16.619047164916992188f ? 1.0f : (x < -9.0f ? exp(x) : 1.0f / (1.0f + exp(-x))))
UNARY(tanh_, tanh(x))
UNARY(hard_swish, x * ((x + 3.0f) < 0.0f ? 0.0f : ((x + 3.0f) > 6.0f ? 6.0f : (x + 3.0f))) / 6.0f)

// D[d_off + r * d_stride + c] = S[s_off + r * s_stride + c]: copies, CONCATENATION slices.
__kernel void copy2d(__global const float* restrict S, __global float* restrict D, const int s_off,
                     const int d_off, const int rows, const int rpi, const int cols, const int chunk,
                     const int s_stride, const int d_stride) {
  const int c0 = get_global_id(0) * chunk;
  const int c1 = c0 + chunk < cols ? c0 + chunk : cols;
  const int r0 = get_global_id(1) * rpi;
  const int r1 = r0 + rpi < rows ? r0 + rpi : rows;
  for (int r = r0; r < r1; r++) {
    const __global float* s = S + s_off + r * s_stride;
    __global float* d = D + d_off + r * d_stride;
    for (int c = c0; c < c1; c++) d[c] = s[c];
  }
}

// PAD of a (collapsed) 4-D tensor with a constant: output rows of o3 elements, `rpi` rows per
// work-item; i0..i3 the input dims, p0..p3 the padding before each. Global (1, row blocks).
__kernel void pad4(__global const float* restrict S, __global float* restrict D, const int rows,
                   const int rpi, const int o1, const int o2, const int o3, const int i0, const int i1,
                   const int i2, const int i3, const int p0, const int p1, const int p2, const int p3,
                   const float value) {
  const int r0 = get_global_id(1) * rpi;
  const int r1 = r0 + rpi < rows ? r0 + rpi : rows;
  for (int r = r0; r < r1; r++) {
    __global float* d = D + r * o3;
    const int j2 = r % o2 - p2, j1 = (r / o2) % o1 - p1, j0 = r / (o2 * o1) - p0;
    if ((uint)j0 >= (uint)i0 || (uint)j1 >= (uint)i1 || (uint)j2 >= (uint)i2) {
      for (int c = 0; c < o3; c++) d[c] = value;
      continue;
    }
    const __global float* s = S + ((j0 * i1 + j1) * i2 + j2) * i3;
    for (int c = 0; c < p3; c++) d[c] = value;
    for (int c = 0; c < i3; c++) d[p3 + c] = s[c];
    for (int c = p3 + i3; c < o3; c++) d[c] = value;
  }
}
