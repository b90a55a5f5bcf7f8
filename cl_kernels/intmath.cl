// int32 arithmetic with numpy broadcasting (after broadcast.cl): ADD, SUB, MUL as cases of one
// kernel, op codes the positions in teflon_py.opencl.lowerings.intmath.OPS. Results wrap like
// two's complement int32 arithmetic (as LiteRT's compiled kernels and the NumPy fallback do): the
// operation runs on the bits as uint, where overflow is defined, then clamps to [lo, hi], the
// fused activation's integer bounds (the type's limits when there is none).
#define INT_CASE(CODE, EXPR)                                                                       \
  case CODE:                                                                                       \
    if (sb_in) {                                                                                   \
      for (int i = c0; i < c1; i++) {                                                              \
        const uint x = as_uint(a[i * sa_in]), y = as_uint(b[i]); const int v = as_int(EXPR);      \
        o[i] = CLAMP(v);                                                                           \
      }                                                                                            \
    } else {                                                                                       \
      const uint y = as_uint(b[0]);                                                                \
      for (int i = c0; i < c1; i++) {                                                              \
        const uint x = as_uint(a[i * sa_in]); const int v = as_int(EXPR); o[i] = CLAMP(v);         \
      }                                                                                            \
    }                                                                                              \
    break;

__kernel void int_binary(__global const int* restrict A, __global const int* restrict B,
                         __global int* restrict O, SIZE_ARGS, const int sa_in, const int sb_in,
                         DIM_ARGS, STRIDE_ARGS(sa), STRIDE_ARGS(sb), const int lo, const int hi,
                         const int op) {
  ROW_RANGE
  for (int r = r0; r < r1; r++) {
    OUTER_INDEX(r)
    const __global int* a = A + OFFSET(sa);
    const __global int* b = B + OFFSET(sb);
    __global int* o = O + r * inner;
    switch (op) {
      INT_CASE(0, x + y)  // ADD
      INT_CASE(1, x - y)  // SUB
      INT_CASE(2, x * y)  // MUL: the low 32 bits of the product, the same signed or unsigned
    }
  }
}
