// int8 / uint8 elementwise kernels, every size and constant an ARGUMENT (one program for all
// shapes and both types). Needs quant.cl before it.
//
// 8-bit tensors travel as bytes: a code u = byte ^ flip (flip 0x80 for int8, 0 for uint8) indexes
// 256-entry tables built on the host by the fallback's own formulas, in value order (u = 0 is the
// type's minimum), and results are stored as the low byte of the clamped int.
// Work split as elementwise.cl: rows of `inner` elements, `rpi` rows or one `chunk` per item.

// This work-item's slice of the broadcasting kernels' rows: rows r0 .. r1 - 1, elements c0 .. c1 - 1
// of each; Q_ROW(r) sets the row's operands a, b and output o (host: broadcast_geometry).
#define Q_SLICE                                                                                     \
  const int c0 = get_global_id(0) * chunk;                                                          \
  const int c1 = c0 + chunk < inner ? c0 + chunk : inner;                                           \
  const int r0 = get_global_id(1) * rpi;                                                            \
  const int r1 = r0 + rpi < rows ? r0 + rpi : rows;
#define Q_ROW(r)                                                                                    \
  int q = r;                                                                                        \
  const int i3 = q % d3; q /= d3;                                                                   \
  const int i2 = q % d2; q /= d2;                                                                   \
  const int i1 = q % d1; const int i0 = q / d1;                                                     \
  const __global uchar* a = A + i0 * sa0 + i1 * sa1 + i2 * sa2 + i3 * sa3;                          \
  const __global uchar* b = B + i0 * sb0 + i1 * sb1 + i2 * sb2 + i3 * sb3;                          \
  __global uchar* o = O + r * inner;

// ADD / SUB / SQUARED_DIFFERENCE with numpy broadcasting (host: broadcast_geometry):
// out = clamp(MBQM(COMBINE(ta[ua], tb[ub]), m, shift) + zo). ADD/SUB's tables hold each input
// already offset, shifted left by 20 and rescaled (TFLite's add.cc / sub.cc),
// int8 SQUARED_DIFFERENCE's offset, shifted left by 7 and rescaled (the host keeps its square in
// int32 and its shift <= 0, where MBQM is squared_difference.cc's SmallerThanOneExp rescaling).
#define QBINARY(NAME, COMBINE)                                                                      \
  __kernel void NAME(__global const uchar* restrict A, __global const uchar* restrict B,          \
                     __global uchar* restrict O, __global const int* restrict ta,                  \
                     __global const int* restrict tb, const int rows, const int rpi,               \
                     const int inner, const int chunk, const int sa_in, const int sb_in,           \
                     const int d1, const int d2, const int d3, const int sa0, const int sa1,       \
                     const int sa2, const int sa3, const int sb0, const int sb1, const int sb2,    \
                     const int sb3, const int flip, const int m, const int shift, const int zo,    \
                     const int lo, const int hi) {                                                 \
    Q_SLICE                                                                                         \
    const i16v m16 = m, l16 = shift > 0 ? shift : 0, r16 = shift > 0 ? 0 : -shift;                  \
    for (int r = r0; r < r1; r++) {                                                                 \
      Q_ROW(r)                                                                                      \
      int i = c0;                                                                                   \
      for (; i + 16 <= c1; i += 16) { /* 16 at a time: table gathers, vector requantization */    \
        i16v x, y;                                                                                  \
        _Pragma("unroll") for (int l = 0; l < 16; l++) {                                           \
          x[l] = ta[a[(i + l) * sa_in] ^ flip];                                                     \
          y[l] = tb[b[(i + l) * sb_in] ^ flip];                                                     \
        }                                                                                           \
        i16v v = q_mbqm16(COMBINE, m16, l16, r16) + zo;                                             \
        v = v < lo ? (i16v)(lo) : v;                                                                \
        v = v > hi ? (i16v)(hi) : v;                                                                \
        STORE16_BYTES(o + i, v);                                                                    \
      }                                                                                             \
      for (; i < c1; i++) {                                                                         \
        const int x = ta[a[i * sa_in] ^ flip], y = tb[b[i * sb_in] ^ flip];                         \
        int v = q_mbqm(COMBINE, m, shift) + zo;                                                     \
        v = v < lo ? lo : (v > hi ? hi : v);                                                        \
        o[i] = (uchar)v;                                                                            \
      }                                                                                             \
    }                                                                                               \
  }

QBINARY(qadd, x + y)
QBINARY(qsub, x - y)
QBINARY(qsquared_difference, (x - y) * (x - y))

// MUL: its operands q - zp are the code plus an offset (oa, ob), so 16 values come
// from one 16-byte load each (an operand read with stride 0 is one value), not 32 table gathers
// (EfficientNet int8's swish and squeeze-excite MULs ran at 1.6 GB/s that way).
__kernel void qmul(__global const uchar* restrict A, __global const uchar* restrict B,
                          __global uchar* restrict O, const int rows, const int rpi, const int inner,
                          const int chunk, const int sa_in, const int sb_in, const int d1, const int d2,
                          const int d3, const int sa0, const int sa1, const int sa2, const int sa3,
                          const int sb0, const int sb1, const int sb2, const int sb3, const int flip,
                          const int m, const int shift, const int zo, const int lo, const int hi,
                          const int oa, const int ob) {
  Q_SLICE
  const i16v m16 = m, l16 = shift > 0 ? shift : 0, r16 = shift > 0 ? 0 : -shift;
  for (int r = r0; r < r1; r++) {
    Q_ROW(r)
    const int xa = (a[0] ^ flip) + oa, yb = (b[0] ^ flip) + ob;  // the stride-0 operands' value
    int i = c0;
    for (; i + 16 <= c1; i += 16) {
      const i16v x = sa_in ? (LOAD16_INT(uchar, a + i) ^ flip) + oa : (i16v)(xa);
      const i16v y = sb_in ? (LOAD16_INT(uchar, b + i) ^ flip) + ob : (i16v)(yb);
      i16v v = q_mbqm16(x * y, m16, l16, r16) + zo;
      v = v < lo ? (i16v)(lo) : v;
      v = v > hi ? (i16v)(hi) : v;
      STORE16_BYTES(o + i, v);
    }
    for (; i < c1; i++) {
      const int x = (a[i * sa_in] ^ flip) + oa, y = (b[i * sb_in] ^ flip) + ob;
      int v = q_mbqm(x * y, m, shift) + zo;
      v = v < lo ? lo : (v > hi ? hi : v);
      o[i] = (uchar)v;
    }
  }
}

// Any 8-bit -> 8-bit function of one value (RELU family, LOGISTIC, TANH, HARD_SWISH, integer
// QUANTIZE): out[i] = table[code], the table computed by the fallback kernel itself on all codes.
__kernel void qlut(__global const uchar* restrict X, __global uchar* restrict O,
                   __global const uchar* restrict table, const int n, const int chunk, const int flip) {
  const int c0 = get_global_id(0) * chunk;
  const int c1 = c0 + chunk < n ? c0 + chunk : n;
  for (int i = c0; i < c1; i++) O[i] = table[X[i] ^ flip];
}

// QUANTIZE float32 -> 8-bit, per tensor or per channel (channel c = (i / inner) % channels):
// TFLite's AffineQuantize, round(x / scale) + zero point with halves away from zero, saturated,
// where x / scale is the correctly rounded float32 quotient. OpenCL only promises 2.5 ulp for a
// float32 division (rusticl: no CORRECTLY_ROUNDED_DIVIDE_SQRT, no fp64), so the quotient q is
// taken as is only when every float within 4 ulps of it rounds to the same integer; near a
// half-integer the correctly rounded quotient is found among those 9 floats as the one whose
// residual x - c * scale (exact through fma: a 24-bit multiple of ulp(c) * ulp(scale) for c
// within an ulp of the quotient) is least; a binary quotient is never exactly a midpoint, so
// there is no tie. Plain arithmetic on the common path (PoCL 3.0 does not inline fma / fabs).
// Q_DIVIDE_SKEW (tests only) moves the first quotient that many ulps, as a sloppy divider would.
#ifndef Q_DIVIDE_SKEW
#define Q_DIVIDE_SKEW 0
#endif

inline int q_round_away(float v) {
  v = v > 1073741824.0f ? 1073741824.0f : (v < -1073741824.0f ? -1073741824.0f : v);
  const int t = (int)v;  // truncates toward zero
  const float f = v - (float)t;
  return t + (f >= 0.5f ? 1 : 0) - (f <= -0.5f ? 1 : 0);
}

// q (finite, nonzero) moved k ulps away from zero (toward zero for k < 0)
inline float q_ulps(float q, int k) { return as_float(as_int(q) + k); }

inline int q_quantize_round(float x, float s) {
  float q = x / s;
  if (q == 0.0f || q - q != 0.0f) return q_round_away(q);  // zero, inf or NaN: nothing to refine
  q = q_ulps(q, Q_DIVIDE_SKEW);
  const int lo = q_round_away(q_ulps(q, -4)), hi = q_round_away(q_ulps(q, 4));
  if (lo == hi) return lo;
  float best = q, least = fabs(fma(-q, s, x));
  for (int k = -4; k <= 4; k++) {
    const float c = q_ulps(q, k);
    const float r = fabs(fma(-c, s, x));
    if (r < least) {
      best = c;
      least = r;
    }
  }
  return q_round_away(best);
}

__kernel void qquantize(__global const float* restrict X, __global uchar* restrict O,
                        __global const float* restrict scale, __global const int* restrict zp,
                        const int n, const int chunk, const int inner, const int channels,
                        const int qmin, const int qmax) {
  const int c0 = get_global_id(0) * chunk;
  const int c1 = c0 + chunk < n ? c0 + chunk : n;
  for (int i = c0; i < c1; i++) {
    const int c = (i / inner) % channels;
    int q = q_quantize_round(X[i], scale[c]) + zp[c];
    q = q < qmin ? qmin : (q > qmax ? qmax : q);
    O[i] = (uchar)q;
  }
}

// DEQUANTIZE 8-bit -> float32, per tensor or per channel: scale * (q - zero point). The product
// of a float32 and an integer below 2^9 is exact in double, so one float32 rounding (this
// multiply) gives LiteRT's double-then-float result.
__kernel void qdequantize(__global const uchar* restrict X, __global float* restrict O,
                          __global const float* restrict scale, __global const int* restrict zp,
                          const int n, const int chunk, const int inner, const int channels,
                          const int flip) {
  const int c0 = get_global_id(0) * chunk;
  const int c1 = c0 + chunk < n ? c0 + chunk : n;
  for (int i = c0; i < c1; i++) {
    const int c = (i / inner) % channels;
    const int q = (int)(X[i] ^ flip) - flip;
    O[i] = scale[c] * (float)(q - zp[c]);
  }
}
