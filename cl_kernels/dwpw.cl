// A float32 DEPTHWISE_CONV_2D (depth multiplier 1, dilation 1, any KH x KW and strides) and the
// 1x1 stride-1 CONV_2D that alone reads its output, in one launch [+ a residual ADD, then a
// PRELU, HARD_SWISH or swish, folded into the 1x1 conv's epilogue exactly as gemm.cl does them]:
// MediaPipe's blocks.
// The depthwise output is computed once per pixel into private memory and never stored.
//
// A TEMPLATE instantiated once per PW (pixels per work-item) as DWPW_NAME; CMAX (>= C) sizes the
// private depthwise rows. Every size is an argument. A work-item takes PW consecutive output
// pixels (flattened over batch, rows, columns; the last block shifted back to end at the last
// pixel, or pixels past the end repeat the last one and are not stored), then:
// 1. the depthwise: for each 16-channel block (C >= 16; the last block shifted back to end at
//    channel C), bias + every tap (taps in the padding read `zeros`, 16 floats of 0; a block
//    whose taps all lie inside the image skips the masks), clamped by the depthwise's own
//    activation [dlo, dhi], into d[PW][CMAX];
// 2. the 1x1 conv: per panel of 16 output channels (packed as gemm's [P][C][16], the last panel
//    shifted back to end at OC, or zero-padded when OC < 16), bias + sum_c d[p][c] * w[c], then
//    clamp [lo, hi]; with `res`, + R (shaped like the output), clamped [rlo, rhi]; with `post`,
//    common.cl's post16 (a PRELU's alpha padded like the bias); stored.
// Depthwise weights arrive as [KH][KW][C], its bias as C floats.
// Global (ceil(pixel blocks / pbn), ceil(panels / pgn)), local 1x1: an item runs `pbn` pixel
// blocks in turn, each over panels g * pgn .. + pgn - 1 (splitting panels recomputes the
// depthwise per group: only for maps too small to give every core pixel blocks).

__kernel void DWPW_NAME(__global const float* restrict in, __global const float* restrict dw,
                        __global const float* restrict dbias, __global const float* restrict zeros,
                        __global const float* restrict B, __global const float* restrict bias,
                        __global float* restrict out, __global const float* restrict R,
                        __global const float* restrict alpha, const int NB, const int IH, const int IW,
                        const int C, const int OH, const int OW, const int KH, const int KW, const int SH,
                        const int SW, const int PT, const int PL, const float dlo, const float dhi,
                        const int OC, const float lo, const float hi, const int res, const float rlo,
                        const float rhi, const int post, const int pbn, const int pgn) {
  const int npix = NB * OH * OW;
  const int panels = (OC + 15) / 16;
  const int j0 = get_global_id(1) * pgn;
  const int j1 = j0 + pgn < panels ? j0 + pgn : panels;
  for (int pi = 0; pi < pbn; pi++) {
    const int pg = (get_global_id(0) * pbn + pi) * PW;
    if (pg >= npix) return;
    const int p0 = npix >= PW && pg > npix - PW ? npix - PW : pg;
    const int pixels = npix - p0 < PW ? npix - p0 : PW;
    // per pixel: its window's first input element (n, ih0, iw0, channel 0) and which filter rows
    // (bit kh) and columns (bit kw) fall inside the image; `inside`: every tap of every pixel
    int base[PW], rows[PW], cols[PW];
    const int full_h = (1 << KH) - 1, full_w = (1 << KW) - 1;
    int inside = 1;
    // the first pixel's (n, oh, ow) by division, the next ones by stepping
    int n = p0 / (OH * OW), oh = (p0 / OW) % OH, ow = p0 % OW;
#pragma unroll
    for (int p = 0; p < PW; p++) {
      const int ih0 = oh * SH - PT, iw0 = ow * SW - PL;
      base[p] = ((n * IH + ih0) * IW + iw0) * C;
      rows[p] = 0;
      cols[p] = 0;
      for (int k = 0; k < KH; k++) rows[p] |= ((uint)(ih0 + k) < (uint)IH) << k;
      for (int k = 0; k < KW; k++) cols[p] |= ((uint)(iw0 + k) < (uint)IW) << k;
      inside &= rows[p] == full_h && cols[p] == full_w;
      if (p0 + p + 1 < npix) next_pixel(&n, &oh, &ow, OH, OW);  // past the end: the last one again
    }
    float d[PW][CMAX];
    for (int cb = 0; cb < C; cb += 16) {
      const int c0 = cb > C - 16 ? C - 16 : cb;
      f16u acc[PW];
      const f16u bv = LOAD16(dbias + c0);
#pragma unroll
      for (int p = 0; p < PW; p++) acc[p] = bv;
      for (int kh = 0; kh < KH; kh++) {
        for (int kw = 0; kw < KW; kw++) {
          const f16u wv = LOAD16(dw + (kh * KW + kw) * C + c0);
          const int tap = (kh * IW + kw) * C + c0;
          if (inside) {
#pragma unroll
            for (int p = 0; p < PW; p++) acc[p] = LOAD16(in + base[p] + tap) * wv + acc[p];
          } else {
#pragma unroll
            for (int p = 0; p < PW; p++)
              acc[p] = LOAD16((rows[p] >> kh) & (cols[p] >> kw) & 1 ? in + base[p] + tap : zeros) * wv + acc[p];
          }
        }
      }
#pragma unroll
      for (int p = 0; p < PW; p++) STORE16_PRIVATE(&d[p][c0], clamp16(acc[p], dlo, dhi));
    }
    for (int j = j0; j < j1; j++) {
      const int n0 = OC >= 16 && j * 16 > OC - 16 ? OC - 16 : j * 16;
      const __global float* b = B + j * (C * 16);
      f16u acc[PW];
      const f16u bv = LOAD16(bias + n0);
#pragma unroll
      for (int p = 0; p < PW; p++) acc[p] = bv;
      for (int c = 0; c < C; c++) {
        const f16u wv = LOAD16(b + c * 16);
#pragma unroll
        for (int p = 0; p < PW; p++) acc[p] = d[p][c] * wv + acc[p];
      }
      __global float* o = out + p0 * OC + n0;
      const __global float* r = R + p0 * OC + n0;
      if (!res && !post && OC >= 16 && pixels == PW) {  // whole vectors, no residual: plain stores
#pragma unroll
        for (int p = 0; p < PW; p++) STORE16(o + p * OC, clamp16(acc[p], lo, hi));
        continue;
      }
      // a residual or a post op, or fewer than PW pixels or 16 channels: a rolled loop (less code to JIT)
      f16u t[PW];
#pragma unroll
      for (int p = 0; p < PW; p++) t[p] = acc[p];
#pragma unroll 1
      for (int p = 0; p < pixels; p++) {
        f16u v = clamp16(t[p], lo, hi);
        if (res) v = clamp16(v + load_upto(r + p * OC, OC - n0), rlo, rhi);
        if (post) v = post16(v, alpha + n0, post);
        store_upto(o + p * OC, v, OC - n0);
      }
    }
  }
}
