// NHWC convolution for layers with fewer than 16 output channels (MediaPipe's 8-channel stems,
// where conv2d.cl's 16-channel vectors would be half empty and every tile would take its rolled
// edge path): the same implicit GEMM with 8-channel vectors (one AVX2 register) and pixel blocks
// that never leave an output row [+ a residual ADD, then a PRELU, folded into the epilogue, as
// in conv2d.cl].
//
// A TEMPLATE instantiated as CONV2D_NARROW_NAME with PW pixels per block; every size is an
// argument. Weights arrive packed [P][KH][KW][IC][8], P = ceil(OC/8) panels of 8 channels, the
// last one shifted back to end at channel OC when OC >= 8 (zero-padded below 8), bias and PRELU
// slopes likewise. A block is PW consecutive pixels of one output row, the row's last block
// shifted back to end at OW (pixels computed and stored twice, with equal values), so its pixels
// share an input row per filter row and lie SW * IC floats apart: no per-pixel index
// arithmetic, and a filter row above or below the image reads `zeros` (>= KW * IC floats of 0)
// for every pixel at once. When every pixel's window row lies inside the image (DW == 1), a
// filter row's KW * IC inputs are contiguous; otherwise taps in the padding read `zeros`.
// Rows narrower than PW repeat their last pixel and store through the rolled edge path, as do
// layers with fewer than 8 channels. A work-item computes `pbn` blocks in turn.
// Global size (P, ceil(NB * OH * ceil(OW / PW) / pbn)), local 1x1.

// common.cl's 16-wide epilogue helpers, 8 wide; defined once per program however many
// instantiations it holds (the guard is not among the template's #undefs).
#ifndef CONV2D_NARROW_HELPERS
#define CONV2D_NARROW_HELPERS
inline f8u clamp8(f8u v, float lo, float hi) {
  v = v < (f8u)(lo) ? (f8u)(lo) : v;
  return v > (f8u)(hi) ? (f8u)(hi) : v;
}

inline f8u prelu8(f8u v, const __global float* a) {
  const f8u s = LOAD8(a);
  return v >= (f8u)(0.0f) ? v : v * s;
}

inline f8u load_upto8(const __global float* p, int n) {  // the first n (< 8: a tail) lanes, the rest 0
  if (n >= 8) return LOAD8(p);
  f8u v = 0.0f;
  for (int l = 0; l < n; l++) v[l] = p[l];
  return v;
}

inline void store_upto8(__global float* p, f8u v, int n) {
  if (n >= 8) {
    STORE8(p, v);
    return;
  }
  for (int l = 0; l < n; l++) p[l] = v[l];
}
#endif

__kernel void CONV2D_NARROW_NAME(__global const float* restrict in, __global const float* restrict w,
                                 __global const float* restrict bias, __global const float* restrict zeros,
                                 __global float* restrict out, __global const float* restrict R,
                                 __global const float* restrict alpha, const int NB, const int IH,
                                 const int IW, const int IC, const int OH, const int OW, const int OC,
                                 const int KH, const int KW, const int SH, const int SW, const int DH,
                                 const int DW, const int PT, const int PL, const float lo, const float hi,
                                 const int res, const float rlo, const float rhi, const int pbn,
                                 const int prelu) {
  const int panel = get_global_id(0);
  const int c0 = OC >= 8 && panel * 8 > OC - 8 ? OC - 8 : panel * 8;  // first channel
  const int per_row = (OW + PW - 1) / PW, blocks = NB * OH * per_row;
  const int pixels = OW < PW ? OW : PW;  // real pixels per block
  const int span = KW * IC;              // one filter row's taps x channels
  const f8u bv = LOAD8(bias + c0);
  for (int pi = 0; pi < pbn; pi++) {
    const int b = get_global_id(1) * pbn + pi;
    if (b >= blocks) return;
    const int row = b / per_row, first = (b - row * per_row) * PW;
    const int ow0 = first > OW - pixels ? OW - pixels : first;
    const int n = row / OH, oh = row - n * OH;
    const int ih0 = oh * SH - PT, iw0 = ow0 * SW - PL;
    const int inside = DW == 1 && iw0 >= 0 && iw0 + (pixels - 1) * SW + KW - 1 < IW;
    const __global float* img = in + n * (IH * IW * IC);
    f8u acc[PW];
#pragma unroll
    for (int p = 0; p < PW; p++) acc[p] = bv;
    const __global float* wp = w + panel * (KH * span * 8);
    for (int kh = 0; kh < KH; kh++, wp += span * 8) {
      const int ih = ih0 + kh * DH;
      const int row_in = (uint)ih < (uint)IH;
      const __global float* rowp = img + ih * (IW * IC);
      const __global float* src[PW];
      if (inside) {
#pragma unroll
        for (int p = 0; p < PW; p++) {
          src[p] = row_in ? rowp + (iw0 + (p < pixels ? p : pixels - 1) * SW) * IC : zeros;
        }
        for (int t = 0; t < span; t++) {
          const f8u wv = LOAD8(wp + t * 8);
#pragma unroll
          for (int p = 0; p < PW; p++) acc[p] = src[p][t] * wv + acc[p];
        }
        continue;
      }
      for (int kw = 0; kw < KW; kw++) {
#pragma unroll
        for (int p = 0; p < PW; p++) {
          const int iw = iw0 + (p < pixels ? p : pixels - 1) * SW + kw * DW;
          src[p] = row_in && (uint)iw < (uint)IW ? rowp + iw * IC : zeros;
        }
        for (int ic = 0; ic < IC; ic++) {
          const f8u wv = LOAD8(wp + (kw * IC + ic) * 8);
#pragma unroll
          for (int p = 0; p < PW; p++) acc[p] = src[p][ic] * wv + acc[p];
        }
      }
    }
    __global float* o = out + (row * OW + ow0) * OC + c0;
    const __global float* r = R + (row * OW + ow0) * OC + c0;
    if (OC >= 8 && pixels == PW) {  // a whole tile: whole-vector loads and stores
#pragma unroll
      for (int p = 0; p < PW; p++) {
        f8u v = clamp8(acc[p], lo, hi);
        if (res) v = clamp8(v + LOAD8(r + p * OC), rlo, rhi);
        if (prelu) v = prelu8(v, alpha + c0);
        STORE8(o + p * OC, v);
      }
      continue;
    }
    // fewer than PW pixels or 8 channels: through a private copy, in a rolled loop
    f8u t[PW];
#pragma unroll
    for (int p = 0; p < PW; p++) t[p] = acc[p];
#pragma unroll 1
    for (int p = 0; p < pixels; p++) {
      f8u v = clamp8(t[p], lo, hi);
      if (res) v = clamp8(v + load_upto8(r + p * OC, OC - c0), rlo, rhi);
      if (prelu) v = prelu8(v, alpha + c0);
      store_upto8(o + p * OC, v, OC - c0);
    }
  }
}
