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
