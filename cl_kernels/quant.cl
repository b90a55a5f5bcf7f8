// TFLite's integer requantization arithmetic: the C twin of teflon_py/quant (core.py, fixedpoint.py).
// One formula, two renderings: tests/test_quant_cl.py runs both on random vectors and compares.
//
// Every function works on int32 values with C's wrapping made explicit (arithmetic through uint
// where TFLite's int32 would wrap), and 64-bit arithmetic only where a 32x32-bit product must be
// exact (SaturatingRoundingDoublingHighMul): once per output element, never in a MAC loop.
// Builtins are avoided (PoCL 3.0 on CPUs turns them into calls): shifts, ternaries and plain
// arithmetic only; clz is written out (used once per softmax row).

// The vector types (i16v, u16v, l8v, f16v) and loads come from vectors.cl.

// XNNPACK's float32 requantization of 16 int32 accumulators: float(acc) * scale, clamped to
// [lo - zp, hi - zp], rounded half to even by its magic-bias trick (exact for |y| < 2^22: adding
// 1.5 * 2^23 leaves the rounded integer in the mantissa), plus the zero point. The C twin of
// teflon_py.quant.requantize_float32.
inline i16v q_requantize_float16(i16v acc, f16v scale, int zp, int lo, int hi) {
  f16v y = CVT_F16(acc) * scale;
  const f16v ylo = (f16v)((float)(lo - zp)), yhi = (f16v)((float)(hi - zp));
  y = y < ylo ? ylo : y;
  y = y > yhi ? yhi : y;
  const f16v magic = (f16v)(12582912.0f);
  const f16v r = (y + magic) - magic;
  return CVT_I16(r) + zp;
}

#define Q_INT32_MIN (-2147483647 - 1)
#define Q_INT32_MAX 2147483647

// gemmlowp's SaturatingRoundingDoublingHighMul: round(a * b / 2^31), the nudge 1 - 2^30 for
// negative products with truncating division, saturating INT32_MIN * INT32_MIN.
inline int q_srdhm(int a, int b) {
  if (a == Q_INT32_MIN && b == Q_INT32_MIN) return Q_INT32_MAX;
  const long ab = (long)a * (long)b;
  const long nudged = ab + (ab >= 0 ? (1L << 30) : (1L - (1L << 30)));
  const long high = nudged >= 0 ? nudged >> 31 : -((-nudged) >> 31);
  return (int)high;
}

// gemmlowp's RoundingDivideByPOT: x / 2^e rounded half away from zero, e in [0, 31]. 32-bit only.
inline int q_rdbpot(int x, int e) {
  const int mask = (int)((1u << e) - 1u);
  const int remainder = x & mask;
  const int threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> e) + (remainder > threshold ? 1 : 0);
}

// TFLite's MultiplyByQuantizedMultiplier: (x << left) wrapped to int32, SRDHM by m, then
// RoundingDivideByPOT by the right shift. shift > 0 shifts left, < 0 right (down to -31).
inline int q_mbqm(int x, int m, int shift) {
  const int left = shift > 0 ? shift : 0;
  const int right = shift > 0 ? 0 : -shift;
  return q_rdbpot(q_srdhm((int)((uint)x << left), m), right);
}

// The same for 16 lanes with per-lane multipliers m > 0 (every scale is positive) and the shift
// split into its left and right parts. For m > 0 the SRDHM is floor((x * m + 2^30) / 2^31): its
// negative nudge with truncating division equals the positive nudge with flooring (see
// teflon_py.quant.requantize), so one 64-bit multiply-add and an arithmetic shift per lane.
// The products are formed in place, as pairs of lanes in 64-bit words: even lanes sign-extended
// where they are (<< 32 >> 32), odd lanes shifted down (>> 32); both are 32x32 -> 64-bit signed
// products (one vpmuldq each on x86), and the odd results land back in the upper halves (<< 1
// after the rounding add puts bits 31..62 there), so no widening or narrowing shuffles.
// The standard rendering takes even lanes from one word vector and odd ones from the other by
// masks instead of a shuffle.
inline i16v q_mbqm16(i16v x, i16v m, i16v left, i16v right) {
#ifdef TEFLON_CLANG_VECTORS
  const i16v xs = __builtin_astype(__builtin_astype(x, u16v) << __builtin_astype(left, u16v), i16v);
  const l8v xw = __builtin_astype(xs, l8v), mw = __builtin_astype(m, l8v);
  const l8v pe = ((xw << 32) >> 32) * ((mw << 32) >> 32) + (l8v)(1L << 30);
  const l8v po = (xw >> 32) * (mw >> 32) + (l8v)(1L << 30);
  const i16v he = __builtin_astype(pe >> 31, i16v), ho = __builtin_astype(po << 1, i16v);
  const i16v hi = __builtin_shufflevector(he, ho, 0, 17, 2, 19, 4, 21, 6, 23, 8, 25, 10, 27, 12, 29, 14, 31);
  const i16v mask = __builtin_astype(((u16v)(1u) << __builtin_astype(right, u16v)) - (u16v)(1u), i16v);
#else
  const i16v xs = as_int16(as_uint16(x) << as_uint16(left));
  const l8v xw = as_long8(xs), mw = as_long8(m);
  const l8v pe = ((xw << 32) >> 32) * ((mw << 32) >> 32) + (l8v)(1L << 30);
  const l8v po = (xw >> 32) * (mw >> 32) + (l8v)(1L << 30);
  const i16v even = (i16v)(-1, 0, -1, 0, -1, 0, -1, 0, -1, 0, -1, 0, -1, 0, -1, 0);
  const i16v hi = (as_int16(pe >> 31) & even) | (as_int16(po << 1) & ~even);
  const i16v mask = as_int16(((u16v)(1u) << as_uint16(right)) - (u16v)(1u));
#endif
  const i16v remainder = hi & mask;
  const i16v threshold = (mask >> 1) - (hi < 0);  // a true lane compares as -1
  return (hi >> right) - (remainder > threshold);
}

// TFLite's fixed-point requantization of int32 accumulators: MultiplyByQuantizedMultiplier by
// per-lane (multiplier, left shift, right shift), plus the zero point, clamped to [lo, hi].
inline i16v q_requantize_fixed16(i16v acc, i16v m, i16v left, i16v right, int zp, int lo, int hi) {
  i16v v = q_mbqm16(acc, m, left, right) + zp;
  v = v < lo ? (i16v)(lo) : v;
  return v > hi ? (i16v)(hi) : v;
}

// 8-bit ops folded into an epilogue as one table (fusion.plan_table_activations: LOGISTIC, TANH,
// HARD_SWISH, a swish's LOGISTIC and MUL), applied to the n (<= 16) outputs just stored at p: each
// byte b becomes table[b ^ flip] (flip 0x80 for int8: entry 0 is -128; 0 for uint8), the entries
// being the output's raw bytes. The bytes are read back from the store just made (L1): looking
// the 16 lanes up in registers ran EfficientNet-B0 int8 ~2% faster but took ~0.08 s more to
// compile in qconv, which every int8 model compiles; a rolled loop ran ~15% slower.
inline void q_table_bytes(__global uchar* p, int n, const __global int* table, int flip) {
  if (n == 16) {
#pragma unroll
    for (int t = 0; t < 16; t++) p[t] = (uchar)table[p[t] ^ flip];
    return;
  }
#pragma unroll 1
  for (int t = 0; t < n; t++) p[t] = (uchar)table[p[t] ^ flip];
}

// LiteRT's reference FULLY_CONNECTED, round(double(acc) * scale) with C's round, plus the zero
// point, clamped -- in integers only, so devices without cl_khr_fp64 compute it too. The scale
// comes as (mh, ml, sk) = (M >> 32, M & 0xFFFFFFFF, k - 30) for scale = M * 2^-k, M < 2^53
// (teflon_py.quant.exact_scale_parts; requantize_scaled_exact is the NumPy twin and says why it
// equals the double rounding): |acc| is normalised to [2^31, 2^32) by shifts (n = its clz), the
// top bits G of |acc| * M come from two 32x32 -> 64-bit products, and one rounding add and shift
// give |y|. Exact for every int32 acc while |lo - zp|, |hi - zp| < 2^19.
inline i16v q_requantize_exact16(i16v acc, i16v mh, i16v ml, i16v sk, int zp, int lo, int hi) {
  u16v u = (u16v)(0u) - AS_U16(acc);
  u = acc < 0 ? u : AS_U16(acc);  // |acc|, 2^31 for INT32_MIN
  i16v n = (i16v)(0);
#define Q_NORMALISE(bits, below)                                                                   \
  {                                                                                                \
    const i16v c = AS_I16(u <= (u16v)(below));                                     \
    n += c & (i16v)(bits);                                                                         \
    u = c ? u << (bits) : u;                                                                       \
  }
  Q_NORMALISE(16, 0x0000FFFFu)
  Q_NORMALISE(8, 0x00FFFFFFu)
  Q_NORMALISE(4, 0x0FFFFFFFu)
  Q_NORMALISE(2, 0x3FFFFFFFu)
  Q_NORMALISE(1, 0x7FFFFFFFu)
#undef Q_NORMALISE
  const ul16v a = CVT_UL16(u);
  const ul16v g = ((a * CVT_UL16(AS_U16(mh))) << 2) +
                  ((a * CVT_UL16(AS_U16(ml))) >> 30);
  i16v sh = sk + n;
  sh = sh > 63 ? (i16v)(63) : sh;
  const ul16v shw = CVT_UL16(AS_U16(sh));
  ul16v m = (g + ((ul16v)(1ul) << (shw - 1ul)) + (g >> 54) + 1ul) >> shw;
  m = m > (ul16v)(1ul << 24) ? (ul16v)(1ul << 24) : m;
  const i16v mag = CVT_I16(m);
  i16v y = (acc < 0 ? -mag : mag) + zp;
  y = y < lo ? (i16v)(lo) : y;
  return y > hi ? (i16v)(hi) : y;
}

// gemmlowp's SaturatingRoundingMultiplyByPOT for a compile-time-known sign of `e`.
inline int q_sat_shift_left(int x, int e) {
  const int threshold = (int)((1u << (31 - e)) - 1u);
  return x > threshold ? Q_INT32_MAX : (x < -threshold ? Q_INT32_MIN : (int)((uint)x << e));
}

// gemmlowp's Rescale between fixed-point formats: src integer bits -> dst integer bits.
inline int q_rescale(int x, int src_bits, int dst_bits) {
  const int e = src_bits - dst_bits;
  return e > 0 ? q_sat_shift_left(x, e) : (e < 0 ? q_rdbpot(x, -e) : x);
}

// gemmlowp's RoundingHalfSum: (a + b) / 2 rounded half away from zero.
inline int q_rounding_half_sum(int a, int b) {
  long s = (long)a + (long)b;
  s += s >= 0 ? 1 : -1;
  return (int)(s >= 0 ? s >> 1 : -((-s) >> 1));
}

// CountLeadingZeros of x read as uint32 (32 for 0), without the clz builtin.
inline int q_clz(int x) {
  uint u = (uint)x;
  int n = 0;
  if (u == 0u) return 32;
  if (u <= 0x0000FFFFu) { n += 16; u <<= 16; }
  if (u <= 0x00FFFFFFu) { n += 8; u <<= 8; }
  if (u <= 0x0FFFFFFFu) { n += 4; u <<= 4; }
  if (u <= 0x3FFFFFFFu) { n += 2; u <<= 2; }
  if (u <= 0x7FFFFFFFu) { n += 1; }
  return n;
}

// gemmlowp's one_over_one_plus_x_for_x_in_0_1: Q0 a -> Q0 1/(1+a), three Newton-Raphson steps.
inline int q_one_over_one_plus_x(int a) {
  const int half_denominator = q_rounding_half_sum(a, Q_INT32_MAX);
  int x = (int)(1515870810u + (uint)q_srdhm(half_denominator, -1010580540));  // Q2: 48/17 - 32/17 d
  for (int i = 0; i < 3; i++) {
    const int one_minus = (int)((uint)(1 << 29) - (uint)q_srdhm(half_denominator, x));
    x = (int)((uint)x + (uint)q_rescale(q_srdhm(x, one_minus), 4, 2));
  }
  return q_rescale(x, 1, 0);
}

// TFLite's GetReciprocal for a Q(digits) x > 0: the Q0 scale; *bits_over_unit its exponent.
inline int q_get_reciprocal(int x, int digits, int* bits_over_unit) {
  const int headroom_plus_one = q_clz(x);
  *bits_over_unit = digits - headroom_plus_one;
  const int shifted_minus_one = (int)(((uint)x << headroom_plus_one) - (1u << 31));
  return q_one_over_one_plus_x(shifted_minus_one);
}

#ifdef QUANT_CL_TEST
// Element-wise drivers for tests/test_quant_cl.py (built only there).
// scale: float32 bit patterns; params: (zero point, lo, hi) at [0], [1], [2]
__kernel void t_requantize_float16(__global const int* acc, __global const int* scale,
                                   __global const int* params, __global int* out) {
  const int i = get_global_id(0) * 16;
  i16v a;
  f16v f;
  for (int l = 0; l < 16; l++) {
    a[l] = acc[i + l];
    f[l] = as_float(scale[i + l]);
  }
  const i16v r = q_requantize_float16(a, f, params[0], params[1], params[2]);
  for (int l = 0; l < 16; l++) out[i + l] = r[l];
}

// (mh, ml, sk) per lane as exact_scale_parts gives them; params: (zero point, lo, hi)
__kernel void t_requantize_exact16(__global const int* acc, __global const int* mh, __global const int* ml,
                                   __global const int* sk, __global const int* params, __global int* out) {
  const int i = get_global_id(0) * 16;
  i16v a, h, l, k;
  for (int j = 0; j < 16; j++) {
    a[j] = acc[i + j];
    h[j] = mh[i + j];
    l[j] = ml[i + j];
    k[j] = sk[i + j];
  }
  const i16v r = q_requantize_exact16(a, h, l, k, params[0], params[1], params[2]);
  for (int j = 0; j < 16; j++) out[i + j] = r[j];
}

__kernel void t_srdhm(__global const int* a, __global const int* b, __global int* out) {
  const int i = get_global_id(0);
  out[i] = q_srdhm(a[i], b[i]);
}

__kernel void t_rdbpot(__global const int* a, __global const int* e, __global int* out) {
  const int i = get_global_id(0);
  out[i] = q_rdbpot(a[i], e[i]);
}

__kernel void t_mbqm(__global const int* x, __global const int* m, __global const int* s, __global int* out) {
  const int i = get_global_id(0);
  out[i] = q_mbqm(x[i], m[i], s[i]);
}

__kernel void t_mbqm16(__global const int* x, __global const int* m, __global const int* s, __global int* out) {
  const int i = get_global_id(0) * 16;
  i16v xv, mv, lv, rv;
  for (int l = 0; l < 16; l++) {
    xv[l] = x[i + l];
    mv[l] = m[i + l];
    lv[l] = s[i + l] > 0 ? s[i + l] : 0;
    rv[l] = s[i + l] > 0 ? 0 : -s[i + l];
  }
  const i16v r = q_mbqm16(xv, mv, lv, rv);
  for (int l = 0; l < 16; l++) out[i + l] = r[l];
}

__kernel void t_reciprocal(__global const int* x, __global int* scale, __global int* bits) {
  const int i = get_global_id(0);
  int b;
  scale[i] = q_get_reciprocal(x[i], 12, &b);
  bits[i] = b;
}

__kernel void t_clz(__global const int* x, __global int* out) {
  const int i = get_global_id(0);
  out[i] = q_clz(x[i]);
}
#endif
