// NHWC TRANSPOSE_CONV in gather form: each output pixel sums the input pixels that TFLite's
// scatter would add into it, so no two work-items write the same output (no atomics).
// Input pixel (iy, ix) lands on output (iy*SH - PT + ky, ix*SW - PL + kx), so output row oy takes
// the taps ky = (oy + PT) mod SH, + SH, ... from input row iy = (oy + PT - ky) / SH, and likewise
// for columns. Output columns of one phase rx = ox mod SW share their column taps, and consecutive
// columns of a phase read consecutive input columns: each work-item computes PW output pixels of
// one row and one phase (ox = rx + SW * j, j = j0 .. j0 + PW - 1) x OCB = 16 * NV output channels
// in PW * NV float16 registers, as conv2d.cl does. Weights arrive packed on the host as
// [OCP/OCB][KH][KW][IC][OCB]; taps that fall outside the input read `zeros` (>= IC floats of 0).
// Macros: NB IH IW IC OH OW OC OCP KH KW SH SW PT PL PW NV NJ [ACT_MIN] [ACT_MAX], NJ = ceil(OW/SW);
// global (OCP/OCB, SW * ceil(NJ/PW), NB*OH), local 1x1x1.
#define OCB (16 * NV)
#define JB ((NJ + PW - 1) / PW)

__kernel void transpose_conv(__global const float* restrict in, __global const float* restrict w,
                             __global const float* restrict bias, __global const float* restrict zeros,
                             __global float* restrict out) {
  const int ocb = get_global_id(0);
  const int rx = get_global_id(1) / JB;
  const int j0 = (get_global_id(1) % JB) * PW;
  const int n = get_global_id(2) / OH, oy = get_global_id(2) % OH;
  const __global float* img = in + n * (IH * IW * IC);
  f16u acc[PW][NV];
#pragma unroll
  for (int j = 0; j < NV; j++) {
    const f16u bv = LOAD16(bias + ocb * OCB + j * 16);
#pragma unroll
    for (int p = 0; p < PW; p++) acc[p][j] = bv;
  }
  for (int ky = (oy + PT) % SH; ky < KH; ky += SH) {
    const int iy = (oy + PT - ky) / SH;  // exact: ky = oy + PT (mod SH)
    if ((uint)iy >= IH) continue;
    const __global float* row = img + iy * (IW * IC);
    for (int kx = (rx + PL) % SW; kx < KW; kx += SW) {
      const int ix0 = j0 + (rx + PL - kx) / SW;  // exact: kx = rx + PL (mod SW)
      const __global float* src[PW];
#pragma unroll
      for (int p = 0; p < PW; p++) src[p] = (uint)(ix0 + p) < IW ? row + (ix0 + p) * IC : zeros;
      const __global float* wp = w + ((ocb * KH + ky) * KW + kx) * (IC * OCB);
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
    }
  }
#pragma unroll
  for (int p = 0; p < PW; p++) {
    const int ox = rx + SW * (j0 + p);
    if (j0 + p < NJ && ox < OW) {
      __global float* o = out + ((n * OH + oy) * OW + ox) * OC + ocb * OCB;
#pragma unroll
      for (int j = 0; j < NV; j++) {
        const int col = ocb * OCB + j * 16;
        if (col + 16 <= OC) STORE16(o + j * 16, act16(acc[p][j]));
        else if (col < OC) store_tail(o + j * 16, act16(acc[p][j]), OC - col);
      }
    }
  }
}
