// NHWC convolution as an implicit GEMM: output pixels (flattened over batch, rows and columns)
// times output channels [+ a residual ADD, then a PRELU, HARD_SWISH or swish, folded into the
// epilogue, as in gemm.cl].
//
// A TEMPLATE instantiated once per blocking (PW, NV) inside one program, each as CONV2D_NAME
// (kernels.BLOCKINGS); every size is an argument. Each work-item computes PW consecutive output
// pixels x OCB = 16 * NV output channels in PW * NV float16 registers; weights arrive packed on
// the host as [P][KH][KW][IC][OCB], P = ceil(OC/OCB) panels, so the inner loop reads one
// OCB-wide row of weights and one scalar per pixel. As in gemm.cl, with OC >= OCB the last panel
// is shifted back to end at channel OC and the last pixel block back to end at the last pixel,
// so every tile is whole (overlaps computed and stored twice); smaller layers take a rolled path.
// Per filter row, when every pixel's window row lies inside the image (and DW == 1), its KW * IC
// inputs are contiguous in NHWC, as are the weights: one loop of KW * IC steps (27 for a 3x3 RGB
// stem instead of 9 loops of 3). Otherwise taps that fall in the padding read from `zeros`
// (>= KW * IC floats of 0) instead of branching in the inner loop. A work-item computes `pbn`
// pixel blocks in turn (fewer, longer work-items: PoCL pays per work-group).
// Global size (P, ceil(NB*OH*OW/PW/pbn)), local 1x1.
#define OCB (16 * NV)

__kernel void CONV2D_NAME(__global const float* restrict in, __global const float* restrict w,
                          __global const float* restrict bias, __global const float* restrict zeros,
                          __global float* restrict out, __global const float* restrict R,
                          __global const float* restrict alpha, const int NB, const int IH,
                          const int IW, const int IC, const int OH,
                          const int OW, const int OC, const int KH, const int KW, const int SH,
                          const int SW, const int DH, const int DW, const int PT, const int PL,
                          const float lo, const float hi, const int res, const float rlo,
                          const float rhi, const int pbn, const int post) {
  const int ocb = get_global_id(0);
  const int c0 = OC >= OCB && ocb * OCB > OC - OCB ? OC - OCB : ocb * OCB;  // first channel
  const int npix = NB * OH * OW;
  for (int pi = 0; pi < pbn; pi++) {  // pbn pixel blocks in turn (fewer, longer work-items)
    const int pg = (get_global_id(1) * pbn + pi) * PW;
    if (pg >= npix) return;
    const int p0 = npix >= PW && pg > npix - PW ? npix - PW : pg;
    int ih0[PW], iw0[PW];
    const __global float* img[PW];
    int row_inside = 1;  // every pixel's window row inside the image horizontally
    // the first pixel's (n, oh, ow) by division, the next ones by stepping (divisions are slow)
    const int q0 = p0 < npix ? p0 : npix - 1;
    int n = q0 / (OH * OW), oh = (q0 / OW) % OH, ow = q0 % OW;
#pragma unroll
    for (int p = 0; p < PW; p++) {
      ih0[p] = oh * SH - PT;
      iw0[p] = ow * SW - PL;
      img[p] = in + n * (IH * IW * IC);
      row_inside &= iw0[p] >= 0 && iw0[p] + (KW - 1) * DW < IW;
      if (p0 + p + 1 < npix) next_pixel(&n, &oh, &ow, OH, OW);  // past the end: the last one again
    }
    row_inside &= DW == 1;
    f16u acc[PW][NV];
#pragma unroll
    for (int j = 0; j < NV; j++) {
      const f16u bv = LOAD16(bias + c0 + j * 16);
#pragma unroll
      for (int p = 0; p < PW; p++) acc[p][j] = bv;
    }
    const int span = KW * IC;  // one filter row's taps x channels
    const __global float* wp = w + ocb * (KH * span * OCB);
    for (int kh = 0; kh < KH; kh++) {
      const __global float* src[PW];
      if (row_inside) {
#pragma unroll
        for (int p = 0; p < PW; p++) {
          const int ih = ih0[p] + kh * DH;
          src[p] = (uint)ih < (uint)IH ? img[p] + (ih * IW + iw0[p]) * IC : zeros;
        }
        for (int t = 0; t < span; t++) {
          f16u wv[NV];
#pragma unroll
          for (int j = 0; j < NV; j++) wv[j] = LOAD16(wp + t * OCB + j * 16);
#pragma unroll
          for (int p = 0; p < PW; p++) {
            const float x = src[p][t];
#pragma unroll
            for (int j = 0; j < NV; j++) acc[p][j] = x * wv[j] + acc[p][j];
          }
        }
        wp += span * OCB;
        continue;
      }
      for (int kw = 0; kw < KW; kw++) {
#pragma unroll
        for (int p = 0; p < PW; p++) {
          const int ih = ih0[p] + kh * DH, iw = iw0[p] + kw * DW;
          src[p] = ((uint)ih < (uint)IH && (uint)iw < (uint)IW) ? img[p] + (ih * IW + iw) * IC : zeros;
        }
        for (int ic = 0; ic < IC; ic++) {
          f16u wv[NV];
#pragma unroll
          for (int j = 0; j < NV; j++) wv[j] = LOAD16(wp + ic * OCB + j * 16);
#pragma unroll
          for (int p = 0; p < PW; p++) {
            const float x = src[p][ic];
#pragma unroll
            for (int j = 0; j < NV; j++) acc[p][j] = x * wv[j] + acc[p][j];
          }
        }
        wp += IC * OCB;
      }
    }
    __global float* o = out + p0 * OC + c0;
    const __global float* r = R + p0 * OC + c0;
    if (!res && !post && OC >= OCB && npix >= PW) {  // a whole tile, no residual: plain stores
#pragma unroll
      for (int p = 0; p < PW; p++) {
#pragma unroll
        for (int j = 0; j < NV; j++) STORE16(o + p * OC + j * 16, clamp16(acc[p][j], lo, hi));
      }
      continue;
    }
    // a residual or a post op, or fewer than PW pixels or OCB channels: through a private copy, in
    // rolled loops (less code to JIT)
    f16u t[PW][NV];
#pragma unroll
    for (int p = 0; p < PW; p++) {
#pragma unroll
      for (int j = 0; j < NV; j++) t[p][j] = acc[p][j];
    }
    const int pixels = npix - p0 < PW ? npix - p0 : PW;
#pragma unroll 1
    for (int p = 0; p < pixels; p++) {
#pragma unroll 1
      for (int j = 0; j < NV && j * 16 < OC - c0; j++) {
        f16u v = clamp16(t[p][j], lo, hi);
        if (res) v = clamp16(v + load_upto(r + p * OC + j * 16, OC - c0 - j * 16), rlo, rhi);
        if (post) v = post16(v, alpha + c0 + j * 16, post);
        store_upto(o + p * OC + j * 16, v, OC - c0 - j * 16);
      }
    }
  }
}
#undef OCB
