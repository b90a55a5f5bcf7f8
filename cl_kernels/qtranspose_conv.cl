// int8 / uint8 NHWC TRANSPOSE_CONV in gather form, as LiteRT's reference kernels compute it: each
// output pixel sums (x - x_zp) * w over the input pixels the reference scatter adds into it, in
// int32 starting from the bias, then per-channel MultiplyByQuantizedMultiplier, + the output
// zero point, clamped to [lo, hi]. Needs quant.cl before it.
//
// Geometry as transpose_conv.cl (the float kernel): input pixel (iy, ix) lands on output
// (iy*SH - PT + ky, ix*SW - PL + kx), so output row oy takes the taps ky = (oy + PT) mod SH,
// + SH, ... from input row (oy + PT - ky) / SH, and a work-item computes PW output columns of
// one row and one column phase rx (ox = rx + SW * j, j = j0 .. j0 + PW - 1) x OCB = 16 * NV
// channels in PW * NV int32x16 registers. Input rows outside the input are skipped; columns
// outside it read `zpad` (IC copies of x_zp), which adds exactly 0 -- as the scatter, where no
// input reaches, adds nothing.
// Weights (host-packed, zero-point-free, output channels zero-padded to OCP):
// [OCP/OCB][KH][KW][IC][OCB] of WT (char when they fit int8, else short: uint8 less its zero
// point). Bias: int32, OCP of them (0 where absent).
// Macros: XT (char|uchar) WT (char|short) NV PW; sizes are arguments.
// Global (OCP/OCB, SW * JB, NB * OH), JB = ceil(ceil(OW / SW) / PW); local 1x1x1.
#define OCB (16 * NV)

__kernel void qtranspose_conv(__global const XT* restrict in, __global const WT* restrict w,
                              __global const int* restrict bias, __global const int* restrict mult,
                              __global const int* restrict lshift, __global const int* restrict rshift,
                              __global const XT* restrict zpad, __global XT* restrict out,
                              const int IH, const int IW, const int IC, const int OH, const int OW,
                              const int OC, const int KH, const int KW, const int SH, const int SW,
                              const int PT, const int PL, const int NJ, const int JB, const int x_zp,
                              const int out_zp, const int lo, const int hi) {
  const int ocb = get_global_id(0);
  const int rx = get_global_id(1) / JB;
  const int j0 = (get_global_id(1) % JB) * PW;
  const int n = get_global_id(2) / OH, oy = get_global_id(2) % OH;
  const __global XT* img = in + n * (IH * IW * IC);
  i16v acc[PW][NV];
#pragma unroll
  for (int j = 0; j < NV; j++) {
    const i16v bv = LOADI16(bias + ocb * OCB + j * 16);
#pragma unroll
    for (int p = 0; p < PW; p++) acc[p][j] = bv;
  }
  for (int ky = (oy + PT) % SH; ky < KH; ky += SH) {
    const int iy = (oy + PT - ky) / SH;  // exact whatever its sign: ky = oy + PT (mod SH)
    if ((uint)iy >= (uint)IH) continue;
    const __global XT* row = img + iy * (IW * IC);
    for (int kx = (rx + PL) % SW; kx < KW; kx += SW) {
      const int ix0 = j0 + (rx + PL - kx) / SW;  // exact: kx = rx + PL (mod SW)
      const __global XT* src[PW];
#pragma unroll
      for (int p = 0; p < PW; p++) src[p] = (uint)(ix0 + p) < (uint)IW ? row + (ix0 + p) * IC : zpad;
      const __global WT* wp = w + ((ocb * KH + ky) * KW + kx) * (IC * OCB);
      for (int ic = 0; ic < IC; ic++) {
        i16v wv[NV];
#pragma unroll
        for (int j = 0; j < NV; j++) wv[j] = LOAD16_INT(WT, wp + ic * OCB + j * 16);
#pragma unroll
        for (int p = 0; p < PW; p++) {
          const int x = (int)src[p][ic] - x_zp;
#pragma unroll
          for (int j = 0; j < NV; j++) acc[p][j] = x * wv[j] + acc[p][j];
        }
      }
    }
  }
#pragma unroll
  for (int j = 0; j < NV; j++) {
    const int oc0 = ocb * OCB + j * 16;
    if (oc0 >= OC) break;
    const i16v m = LOADI16(mult + oc0), l = LOADI16(lshift + oc0), r = LOADI16(rshift + oc0);
#pragma unroll
    for (int p = 0; p < PW; p++) {
      const int ox = rx + SW * (j0 + p);
      if (j0 + p >= NJ || ox >= OW) break;
      __global XT* o = out + ((n * OH + oy) * OW + ox) * OC + oc0;
      const i16v v = q_requantize_fixed16(acc[p][j], m, l, r, out_zp, lo, hi);
      if (oc0 + 16 <= OC) {
        STORE16_BYTES(o, v);
      } else {
        for (int t = 0; t < OC - oc0; t++) o[t] = (XT)v[t];
      }
    }
  }
}
