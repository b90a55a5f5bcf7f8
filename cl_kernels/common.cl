// Shared by the float kernels: the fused activation and 16-wide row helpers (f16u, LOAD16 and
// STORE16 come from vectors.cl). Clamps are ternaries instead of clamp/fmin/fmax: PyPI's PoCL
// 3.0 turns those builtins into real calls on CPUs, which costs up to 10x in a hot loop.
// a * b + c contracts to an FMA on its own.

// ACT_MIN / ACT_MAX: the fused activation's bounds; absent means unbounded on that side.
inline f16u act16(f16u v) {
#ifdef ACT_MIN
  v = v < (f16u)(ACT_MIN) ? (f16u)(ACT_MIN) : v;
#endif
#ifdef ACT_MAX
  v = v > (f16u)(ACT_MAX) ? (f16u)(ACT_MAX) : v;
#endif
  return v;
}

inline float act1(float v) {
#ifdef ACT_MIN
  v = v < ACT_MIN ? ACT_MIN : v;
#endif
#ifdef ACT_MAX
  v = v > ACT_MAX ? ACT_MAX : v;
#endif
  return v;
}

// The output pixel after (n, oh, ow) in NHWC order, as a work-item steps through its run of
// pixels (a division per pixel costs more). Lower-case names: kernels compiled with -DOH=...
// include this file too.
inline void next_pixel(int* n, int* oh, int* ow, const int out_h, const int out_w) {
  if (++*ow == out_w) {
    *ow = 0;
    if (++*oh == out_h) {
      *oh = 0;
      ++*n;
    }
  }
}

// Store the first `n` (< 16) lanes of v: the tail of a row whose length is not a multiple of 16.
inline void store_tail(__global float* p, f16u v, int n) {
  for (int l = 0; l < n; l++) p[l] = v[l];
}

// Runtime clamp bounds (lo/hi = -inf/+inf when unbounded; NaN passes through), for kernels whose
// activation is an argument rather than a macro, so one program serves every activation.
inline f16u clamp16(f16u v, float lo, float hi) {
  v = v < (f16u)(lo) ? (f16u)(lo) : v;
  return v > (f16u)(hi) ? (f16u)(hi) : v;
}

// A PRELU folded into an epilogue: v where v >= 0, else v times the 16 channels' slopes at `a`
// (TFLite's x >= 0 ? x : x * alpha; NaN takes the product, which keeps it NaN).
inline f16u prelu16(f16u v, const __global float* a) {
  const f16u s = LOAD16(a);
  return v >= (f16u)(0.0f) ? v : v * s;
}

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

// LOGISTIC, TFLite's reference formula (1 above LOGISTIC_HIGH, e^x below LOGISTIC_LOW, else
// 1 / (1 + e^-x)) with exp16_small (0 below -87, where expf's results are subnormal; NaN stays
// NaN): elementwise.cl's logistic and an epilogue's folded swish.
inline f16u logistic16(f16u x) {
  const f16u low = x < (f16u)(LOGISTIC_LOW) ? (f16u)(1.0f) : (f16u)(0.0f);
  const f16u arg = low != 0.0f ? (x < -87.0f ? (f16u)(-87.0f) : x) : (x > 87.0f ? (f16u)(87.0f) : -x);
  const f16u e = exp16_small(arg);
  f16u v = low != 0.0f ? (x < -87.0f ? (f16u)(0.0f) : e) : 1.0f / (1.0f + e);
  v = x > (f16u)(LOGISTIC_HIGH) ? (f16u)(1.0f) : v;
  return x != x ? x : v;
}

// HARD_SWISH, TFLite's reference formula x * min(6, max(0, x + 3)) / 6 (elementwise.cl's
// hard_swish, operation for operation).
inline f16u hard_swish16(f16u x) {
  const f16u s = x + 3.0f;
  return x * (s < (f16u)(0.0f) ? (f16u)(0.0f) : (s > (f16u)(6.0f) ? (f16u)(6.0f) : s)) / 6.0f;
}

// The op an epilogue applies last (fusion.py folds it into the producer; the kernels' `post`
// argument, specs.POST_CODES): 1 a PRELU with the 16 channels' slopes at `a`, 2 HARD_SWISH,
// 3 swish x * LOGISTIC(x) (the MUL's rounding: one product). Callers test post != 0 first.
inline f16u post16(f16u v, const __global float* a, int post) {
  if (post == 1) return prelu16(v, a);
  if (post == 2) return hard_swish16(v);
  return v * logistic16(v);
}

// The first `n` lanes at p (all 16 when n >= 16), the rest 0: a row's tail without reading past it.
inline f16u load_upto(const __global float* p, int n) {
  if (n >= 16) return LOAD16(p);
  f16u v = 0.0f;
  for (int l = 0; l < n; l++) v[l] = p[l];
  return v;
}

// Store the first `n` lanes of v (all 16 when n >= 16, none when n <= 0).
inline void store_upto(__global float* p, f16u v, int n) {
  if (n >= 16) STORE16(p, v);
  else store_tail(p, v, n);
}
