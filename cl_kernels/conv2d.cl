// NHWC convolution as an implicit GEMM: output pixels (flattened over batch, rows and columns)
// times output channels. Each work-item computes PW consecutive output pixels x OCB = 16 * NV
// output channels in PW * NV float16 registers; weights arrive packed on the host as
// [OCP/OCB][KH][KW][IC][OCB] (zero-padded to OCP channels), so the inner loop over input
// channels reads one OCB-wide row of weights and one scalar per pixel. Taps that fall in the
// padding read from `zeros` (>= IC floats of 0) instead of branching in the inner loop.
// Macros: NB IH IW IC OH OW OC OCP KH KW SH SW DH DW PT PL PW NV [ACT_MIN] [ACT_MAX];
// global size (OCP/OCB, ceil(NB*OH*OW/PW)), local 1x1.
#define OCB (16 * NV)
#define NPIX (NB * OH * OW)

__kernel void conv2d(__global const float* restrict in, __global const float* restrict w,
                     __global const float* restrict bias, __global const float* restrict zeros,
                     __global float* restrict out) {
  const int ocb = get_global_id(0);
  const int p0 = get_global_id(1) * PW;
  int ih0[PW], iw0[PW];
  const __global float* img[PW];
#pragma unroll
  for (int p = 0; p < PW; p++) {
    const int q = p0 + p < NPIX ? p0 + p : NPIX - 1;
    const int n = q / (OH * OW), r = q % (OH * OW);
    ih0[p] = (r / OW) * SH - PT;
    iw0[p] = (r % OW) * SW - PL;
    img[p] = in + n * (IH * IW * IC);
  }
  f16u acc[PW][NV];
#pragma unroll
  for (int j = 0; j < NV; j++) {
    const f16u bv = LOAD16(bias + ocb * OCB + j * 16);
#pragma unroll
    for (int p = 0; p < PW; p++) acc[p][j] = bv;
  }
  const __global float* wp = w + ocb * (KH * KW * IC * OCB);
  for (int kh = 0; kh < KH; kh++) {
    for (int kw = 0; kw < KW; kw++) {
      const __global float* src[PW];
#pragma unroll
      for (int p = 0; p < PW; p++) {
        const int ih = ih0[p] + kh * DH, iw = iw0[p] + kw * DW;
        src[p] = ((uint)ih < IH && (uint)iw < IW) ? img[p] + (ih * IW + iw) * IC : zeros;
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
#pragma unroll
  for (int p = 0; p < PW; p++) {
    if (p0 + p < NPIX) {
      __global float* o = out + (p0 + p) * OC + ocb * OCB;
#pragma unroll
      for (int j = 0; j < NV; j++) {
        const int col = ocb * OCB + j * 16;
        if (col + 16 <= OC) STORE16(o + j * 16, act16(acc[p][j]));
        else if (col < OC) store_tail(o + j * 16, act16(acc[p][j]), OC - col);
      }
    }
  }
}
