// Float32 maths beyond ADD/SUB/MUL and the common activations (those stay in elementwise.cl):
// binary ops with broadcasting (after broadcast.cl) and unary ops, each a case of one kernel.
// Op codes are the positions of the op in teflon_py.opencl.ops_math (BINARY_OPS, UNARY_OPS).
//
// Accuracy: no relaxed math; pow, atan2, exp, expm1, log, sin, cos, tanh, erfc are OpenCL's builtins
// (a few ulp; PoCL's erfc measured at ~1 ulp, the spec allows 16), far inside 1e-5 relative L2.

// Rows against one value of b (a scalar, a per-row constant) hoist it; others read each operand
// with stride 1 or 0 (LLVM versions that loop for strides of 1, so same-shape rows vectorise).
#define BINARY_CASE(CODE, EXPR)                                                                    \
  case CODE:                                                                                       \
    if (sb_in) {                                                                                   \
      for (int i = c0; i < c1; i++) {                                                              \
        const float x = a[i * sa_in], y = b[i]; const float v = EXPR; o[i] = CLAMP(v);             \
      }                                                                                            \
    } else {                                                                                       \
      const float y = b[0];                                                                        \
      for (int i = c0; i < c1; i++) { const float x = a[i * sa_in]; const float v = EXPR; o[i] = CLAMP(v); } \
    }                                                                                              \
    break;

// out = clamp(x OP y), numpy broadcasting. DIV's host clamp is +-FLT_MAX at least (TFLite's x / 0
// is +-FLT_MAX, not inf); MAXIMUM/MINIMUM are TFLite's ternaries (a NaN in y wins, one in x not).
__kernel void binary_math(__global const float* restrict A, __global const float* restrict B,
                          __global float* restrict O, SIZE_ARGS, const int sa_in, const int sb_in,
                          DIM_ARGS, STRIDE_ARGS(sa), STRIDE_ARGS(sb), const float lo, const float hi,
                          const int op) {
  ROW_RANGE
  for (int r = r0; r < r1; r++) {
    OUTER_INDEX(r)
    const __global float* a = A + OFFSET(sa);
    const __global float* b = B + OFFSET(sb);
    __global float* o = O + r * inner;
    switch (op) {
      BINARY_CASE(0, x / y)                      // DIV
      BINARY_CASE(1, pow(x, y))                  // POW
      BINARY_CASE(2, x > y ? x : y)              // MAXIMUM
      BINARY_CASE(3, x < y ? x : y)              // MINIMUM
      BINARY_CASE(4, (x - y) * (x - y))          // SQUARED_DIFFERENCE
      BINARY_CASE(5, x >= 0.0f ? x : x * y)      // PRELU (y: alpha)
      BINARY_CASE(6, atan2(x, y))                // ATAN2 (same shapes only)
    }
  }
}

#define UNARY_CASE(CODE, EXPR)                                                                     \
  case CODE:                                                                                       \
    for (int i = c0; i < c1; i++) { const float x = X[i]; const float v = EXPR; O[i] = CLAMP(v); } \
    break;

// The same over 16 lanes at a time (the tail as UNARY_CASE): PyPI's PoCL does not inline OpenCL
// builtins, so a transcendental called per element costs a call each (GELU's erfc ran at 0.2 GB/s
// in a transformer); the 16-lane overload costs one call per 16 elements, with the same accuracy.
#define UNARY_VCASE(CODE, EXPR)                                                                    \
  case CODE: {                                                                                     \
    int i = c0;                                                                                    \
    for (; i + 16 <= c1; i += 16) {                                                                \
      const f16v x = LOAD16(X + i);                                                                \
      f16v v = EXPR;                                                                               \
      v = v < (f16v)(lo) ? (f16v)(lo) : v;                                                         \
      STORE16(O + i, v > (f16v)(hi) ? (f16v)(hi) : v);                                             \
    }                                                                                              \
    for (; i < c1; i++) { const float x = X[i]; const float v = EXPR; O[i] = CLAMP(v); }           \
    break;                                                                                         \
  }

// out[i] = clamp(EXPR(x)) over n elements; a work-item takes one `chunk`. Global (ceil(n/chunk)).
// `p`: the op's parameter (LEAKY_RELU's alpha).
__kernel void unary_math(__global const float* restrict X, __global float* restrict O, const int n,
                         const int chunk, const float lo, const float hi, const float p, const int op) {
  const int c0 = get_global_id(0) * chunk;
  const int c1 = c0 + chunk < n ? c0 + chunk : n;
  switch (op) {
    UNARY_CASE(0, as_float(as_uint(x) & 0x7fffffffu))              // ABS
    UNARY_CASE(1, -x)                                              // NEG
    UNARY_VCASE(2, exp(x))                                         // EXP
    UNARY_VCASE(3, log(x))                                         // LOG
    UNARY_CASE(4, sqrt(x))                                         // SQRT
    UNARY_CASE(5, 1.0f / sqrt(x))                                  // RSQRT: TFLite's 1.f / std::sqrt
    UNARY_CASE(6, x * x)                                           // SQUARE
    UNARY_CASE(7, sin(x))                                          // SIN (the 16-lane builtins
    UNARY_CASE(8, cos(x))                                          // COS  reduce large arguments worse)
    UNARY_CASE(9, floor(x))                                        // FLOOR
    UNARY_CASE(10, x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x))       // SIGN (0 and NaN pass through)
    UNARY_CASE(11, x > 0.0f ? x : x * p)                           // LEAKY_RELU
    UNARY_VCASE(12, x < 0.0f ? expm1(x) : x)                       // ELU
    // 13: GELU runs elementwise.cl's gelu (its own erfc, 16 lanes at a time)
    UNARY_VCASE(14, 0.5f * x * (1.0f + tanh(0.79788456080286536f * (x + 0.044715f * x * x * x))))  // GELU approximate
    UNARY_CASE(15, ceil(x))                                        // CEIL
    UNARY_CASE(16, rint(x))                                        // ROUND: half to even
  }
}
