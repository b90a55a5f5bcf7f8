// gemmlowp's FixedPoint<int16> maths and TFLite's inverse square root: the C twin of
// teflon_py/quant/fixedpoint16.py (logistic_int16, tanh_gemmlowp_int16) and of
// quant/lut.py's get_inv_sqrt_quantized_multiplier_exp, for the integer LSTM (qlstm.cl).
// After quant.cl (q_srdhm, q_rdbpot, q_clz, q_sat_shift_left). Raw int16 values travel as int;
// tests/test_fixedpoint16_cl.py runs every int16 input through both renderings.

// The low 16 bits of x as a signed value (C's wrap to int16_t, without implementation-defined casts).
inline int f16_wrap(int x) { return ((x & 0xFFFF) ^ 0x8000) - 0x8000; }

inline int f16_clamp(int x) { return x < -32768 ? -32768 : (x > 32767 ? 32767 : x); }

// RescaleConstantInitializer<int16>: a Q-format int32 constant rounded to 16 bits.
inline int f16_const(int v) { return q_rdbpot(v, 16); }

// SaturatingRoundingDoublingHighMul on int16: round(a * b / 2^15), saturating.
inline int f16_srdhm(int a, int b) {
  if (a == -32768 && b == -32768) return 32767;
  const int ab = a * b;
  const int nudged = ab + (ab >= 0 ? (1 << 14) : (1 - (1 << 14)));
  const int high = nudged >= 0 ? nudged >> 15 : -((-nudged) >> 15);
  return f16_wrap(high);
}

// SaturatingRoundingMultiplyByPOT on int16 for a known exponent.
inline int f16_srmpot(int x, int e) {
  if (e < 0) return q_rdbpot(x, -e);
  if (e == 0) return x;
  const int threshold = (1 << (15 - e)) - 1;
  return x > threshold ? 32767 : (x < -threshold ? -32768 : x << e);
}

inline int f16_rounding_half_sum(int a, int b) {
  int s = a + b;
  s += s >= 0 ? 1 : -1;
  return s >= 0 ? s >> 1 : -((-s) >> 1);
}

// exp_on_interval_between_negative_one_quarter_and_0_excl, Q0.15 (the last add saturates).
inline int f16_exp_on_interval(int a) {
  const int constant_term = f16_const(1895147668);
  const int x = f16_wrap(a + (1 << 12));
  const int x2 = f16_srdhm(x, x);
  const int x3 = f16_srdhm(x2, x);
  const int x4 = f16_srdhm(x2, x2);
  const int x4_over_4 = q_rdbpot(x4, 2);
  const int poly = q_rdbpot(f16_wrap(f16_srdhm(f16_wrap(x4_over_4 + x3), f16_const(715827883)) + x2), 1);
  return f16_clamp(constant_term + f16_srdhm(constant_term, f16_wrap(x + poly)));
}

// exp_on_negative_values: Q(integer_bits) a <= 0 -> Q0.15 exp(a).
inline int f16_exp_on_negative_values(int a, int integer_bits) {
  const int fractional_bits = 15 - integer_bits;
  const int one_quarter = 1 << (fractional_bits - 2);
  const int amq = f16_wrap((a & (one_quarter - 1)) - one_quarter);
  int result = f16_exp_on_interval(f16_srmpot(amq, integer_bits));
  const int remainder = f16_wrap(amq - a);
  const int powers[7] = {-2, -1, 0, 1, 2, 3, 4};
  const int multipliers[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
  for (int k = 0; k < 7; k++) {
    if (integer_bits > powers[k] && (remainder & (1 << (fractional_bits + powers[k]))) != 0) {
      result = f16_srdhm(result, f16_const(multipliers[k]));
    }
  }
  if (integer_bits > 5 && a < f16_const(-(1 << (36 - integer_bits)))) result = 0;
  return a == 0 ? 32767 : result;
}

// The Q2.13 Newton-Raphson estimate of 1 / ((1 + a) / 2), shared by the int16 logistic and tanh.
inline int f16_newton_reciprocal(int a) {
  const int half_denominator = f16_rounding_half_sum(a, 32767);
  int x = f16_wrap(f16_const(1515870810) + f16_srdhm(half_denominator, f16_const(-1010580540)));
  for (int k = 0; k < 3; k++) {
    const int one_minus = f16_wrap((1 << 13) - f16_srdhm(half_denominator, x));
    x = f16_wrap(x + f16_srmpot(f16_srdhm(x, one_minus), 2));
  }
  return x;
}

// gemmlowp::logistic on FixedPoint<int16, integer_bits> -> Q0.15.
inline int f16_logistic(int a, int integer_bits) {
  if (a == 0) return f16_const(1 << 30);
  const int abs_input = a > 0 ? a : f16_wrap(-a);
  const int x = f16_newton_reciprocal(f16_exp_on_negative_values(f16_wrap(-abs_input), integer_bits));
  const int if_positive = f16_srmpot(x, 1);
  return a > 0 ? if_positive : f16_wrap(32767 - if_positive);
}

// gemmlowp::tanh on FixedPoint<int16, integer_bits> -> Q0.15.
inline int f16_tanh(int a, int integer_bits) {
  if (a == 0) return 0;
  const int n = a < 0 ? a : f16_wrap(-a);
  const int x = f16_newton_reciprocal(f16_exp_on_negative_values(n, integer_bits + 1));
  const int t = f16_srmpot(f16_wrap(x - (1 << 13)), 2);
  return a < 0 ? f16_wrap(-t) : t;
}

// TFLite's GetInvSqrtQuantizedMultiplierExp(x, reverse_shift = -1): the multiplier of 1/sqrt(x),
// its shift in *shift (<= 0). Five Newton-Raphson steps in Q3.
inline int f16_inv_sqrt(int x, int* shift) {
  if (x <= 1) {
    *shift = 0;
    return Q_INT32_MAX;
  }
  int s = 11;
  while (x >= (1 << 29)) {
    x /= 4;
    s++;
  }
  const int pairs = (q_clz(x) - 1) / 2 - 1;
  s -= pairs;
  x <<= 2 * pairs;
  const int half_input = q_rdbpot(x >> 1, 1);
  const int half_three = (1 << 28) + (1 << 27);
  int y = 1 << 28;
  for (int k = 0; k < 5; k++) {
    const int y3 = q_sat_shift_left(q_srdhm(q_srdhm(y, y), y), 6);
    y = q_sat_shift_left((int)((uint)q_srdhm(half_three, y) - (uint)q_srdhm(half_input, y3)), 3);
  }
  y = q_srdhm(y, 1518500250);
  if (s < 0) y = (int)((uint)y << -s);
  *shift = -(s > 0 ? s : 0);
  return y;
}

#ifdef FIXEDPOINT16_CL_TEST
// Element-wise drivers for tests/test_fixedpoint16_cl.py (built only there).
__kernel void t_logistic16(__global const int* x, __global const int* bits, __global int* out) {
  const int i = get_global_id(0);
  out[i] = f16_logistic(x[i], bits[i]);
}

__kernel void t_tanh16(__global const int* x, __global const int* bits, __global int* out) {
  const int i = get_global_id(0);
  out[i] = f16_tanh(x[i], bits[i]);
}

__kernel void t_inv_sqrt(__global const int* x, __global int* m, __global int* s) {
  const int i = get_global_id(0);
  int shift;
  m[i] = f16_inv_sqrt(x[i], &shift);
  s[i] = shift;
}
#endif
