// Ops whose tensors are not all float32 (after broadcast.cl): comparisons and logical ops, SELECT,
// CAST. A bool tensor is stored as NumPy stores it, one byte 0 or 1 (uchar here); int8 is char,
// uint8 uchar, int32 int. Buffers arrive as bytes and are read through the op's element type.
// Op codes and truth tables are computed in teflon_py.opencl.ops_compare.

// A comparison is a truth table over the outcomes of (x, y): bit k of `table` is the result for
// outcome k. Ordered types: 0 x < y, 1 x == y, 2 x > y, 3 unordered (a NaN); bytes (bool):
// k = 2 (x != 0) + (y != 0), which also gives LOGICAL_AND and LOGICAL_OR. One loop per type, not
// per op, keeps the kernel small (PoCL compiles every kernel when the binary is cached).
#define ORDERED(x, y) ((x) < (y) ? 0 : ((x) == (y) ? 1 : ((x) > (y) ? 2 : 3)))
#define BYTES(x, y) (((x) != 0) * 2 + ((y) != 0))

// Rows against one value of b hoist it; others read each operand with stride 1 or 0 (LLVM
// versions that loop for strides of 1, so same-shape rows vectorise).
#define COMPARE_TYPE(T, OUTCOME)                                                                   \
  {                                                                                                \
    const __global T* a = (const __global T*)A + OFFSET(sa);                                       \
    const __global T* b = (const __global T*)B + OFFSET(sb);                                       \
    if (sb_in) {                                                                                   \
      for (int i = c0; i < c1; i++) { const T x = a[i * sa_in], y = b[i]; o[i] = (table >> OUTCOME(x, y)) & 1; } \
    } else {                                                                                       \
      const T y = b[0];                                                                            \
      for (int i = c0; i < c1; i++) { const T x = a[i * sa_in]; o[i] = (table >> OUTCOME(x, y)) & 1; } \
    }                                                                                              \
  }

// out = table(x, y) as a 0/1 byte, numpy broadcasting; type 0 float32, 1 int32, 2 bytes (bool).
__kernel void compare(__global const uchar* restrict A, __global const uchar* restrict B,
                      __global uchar* restrict O, SIZE_ARGS, const int sa_in, const int sb_in,
                      DIM_ARGS, STRIDE_ARGS(sa), STRIDE_ARGS(sb), const int type, const int table) {
  ROW_RANGE
  for (int r = r0; r < r1; r++) {
    OUTER_INDEX(r)
    __global uchar* o = O + r * inner;
    if (type == 0) COMPARE_TYPE(float, ORDERED)
    else if (type == 1) COMPARE_TYPE(int, ORDERED)
    else COMPARE_TYPE(uchar, BYTES)
  }
}

#define SELECT_CASE(T)                                                                             \
  {                                                                                                \
    const __global T* x = (const __global T*)X + OFFSET(sx);                                       \
    const __global T* y = (const __global T*)Y + OFFSET(sy);                                       \
    __global T* o = (__global T*)O + r * inner;                                                    \
    for (int i = c0; i < c1; i++) o[i] = c[i * sc_in] ? x[i * sx_in] : y[i * sy_in];               \
  }

// O = C ? X : Y, the three broadcast together; values of `bytes` 4 (float32, int32: bits copied)
// or 1 (bool, int8, uint8).
__kernel void select_values(__global const uchar* restrict C, __global const uchar* restrict X,
                            __global const uchar* restrict Y, __global uchar* restrict O, SIZE_ARGS,
                            const int sc_in, const int sx_in, const int sy_in, DIM_ARGS,
                            STRIDE_ARGS(sc), STRIDE_ARGS(sx), STRIDE_ARGS(sy), const int bytes) {
  ROW_RANGE
  for (int r = r0; r < r1; r++) {
    OUTER_INDEX(r)
    const __global uchar* c = C + OFFSET(sc);
    if (bytes == 4) SELECT_CASE(uint) else SELECT_CASE(uchar)
  }
}

// CAST as TFLite's static_cast: integers wrap (two's complement truncation), anything to bool is
// x != 0 (NaN is true), float to integer saturates with NaN -> max. F2I's float bounds are the
// largest float32 values inside the type (2147483520 for int32); beyond them, the type's limits.
#define F2I(x, LOF, HIF, LO, HI) ((x) != (x) || (x) > (HIF) ? (HI) : ((x) < (LOF) ? (LO) : (int)(x)))
#define CAST_CASE(CODE, TX, TO, EXPR)                                                              \
  case CODE: {                                                                                     \
    const __global TX* X = (const __global TX*)XB;                                                 \
    __global TO* O = (__global TO*)OB;                                                             \
    for (int i = c0; i < c1; i++) { const TX x = X[i]; O[i] = (TO)(EXPR); }                        \
  } break;
// From integer or bool source type TX (code base SRC * 5); destinations f32, i32, i8, u8, b8.
#define FROM_INTEGER(SRC, TX)                 \
  CAST_CASE(SRC * 5 + 0, TX, float, (float)x) \
  CAST_CASE(SRC * 5 + 1, TX, int, x)          \
  CAST_CASE(SRC * 5 + 2, TX, char, x)         \
  CAST_CASE(SRC * 5 + 3, TX, uchar, x)        \
  CAST_CASE(SRC * 5 + 4, TX, uchar, x != 0)

// out[i] = CAST(x) over n elements, op = source * 5 + destination with the types numbered f32,
// i32, i8, u8, b8; op 25 is LOGICAL_NOT. Global (ceil(n/chunk)).
__kernel void cast_values(__global const uchar* restrict XB, __global uchar* restrict OB, const int n,
                          const int chunk, const int op) {
  const int c0 = get_global_id(0) * chunk;
  const int c1 = c0 + chunk < n ? c0 + chunk : n;
  switch (op) {
    CAST_CASE(0, float, float, x)
    CAST_CASE(1, float, int, F2I(x, -2147483648.0f, 2147483520.0f, (int)0x80000000, 0x7fffffff))
    CAST_CASE(2, float, char, F2I(x, -128.0f, 127.0f, -128, 127))
    CAST_CASE(3, float, uchar, F2I(x, 0.0f, 255.0f, 0, 255))
    CAST_CASE(4, float, uchar, x != 0.0f)
    FROM_INTEGER(1, int)
    FROM_INTEGER(2, char)
    FROM_INTEGER(3, uchar)
    FROM_INTEGER(4, uchar)
    CAST_CASE(25, uchar, uchar, !x)
  }
}

// CAST between float16 and float32 over n elements: op 0 half -> float, op 1 float -> half rounded
// to nearest even. vload_half / vstore_half_rte are core OpenCL C: no cl_khr_fp16 needed.
__kernel void cast_half(__global const uchar* restrict XB, __global uchar* restrict OB, const int n,
                        const int chunk, const int op) {
  const int c0 = get_global_id(0) * chunk;
  const int c1 = c0 + chunk < n ? c0 + chunk : n;
  if (op == 0) {
    const __global half* X = (const __global half*)XB;
    __global float* O = (__global float*)OB;
    for (int i = c0; i < c1; i++) O[i] = vload_half(i, X);
  } else {
    const __global float* X = (const __global float*)XB;
    __global half* O = (__global half*)OB;
    for (int i = c0; i < c1; i++) vstore_half_rte(X[i], i, O);
  }
}
