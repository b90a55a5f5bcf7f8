// NHWC depthwise convolution, output channel oc = ic * DM + m, vectorised over 16 output
// channels. Each work-item computes PW consecutive output pixels of one row x 16 channels. Per
// kernel row it loads the SPAN input pixels its PW outputs touch once, then forms every
// (pixel, tap) product from registers. Taps in the padding read `zeros` (>= OCP floats of 0).
// Weights arrive packed as [KH][KW][OCP] (zero-padded), bias as [OCP].
// Macros: NB IH IW C DM OC OCP OH OW KH KW SH SW DH DW PT PL PW [ACT_MIN] [ACT_MAX];
// global size (OCP/16, ceil(OW/PW), NB*OH), local 1x1x1.
#define SPAN ((PW - 1) * SW + (KW - 1) * DW + 1)

// 16 output channels' inputs at pixel `px`: a vector load when DM == 1 and the block is whole,
// else a lane-by-lane gather that stops at the tensor's last channel.
inline f16u load_channels(const __global float* px, int oc0) {
#if DM == 1
  if (oc0 + 16 <= C) return LOAD16(px + oc0);
#endif
  f16u v = 0.0f;
  for (int l = 0; l < 16; l++) v[l] = oc0 + l < OC ? px[(oc0 + l) / DM] : 0.0f;
  return v;
}

__kernel void depthwise(__global const float* restrict in, __global const float* restrict w,
                        __global const float* restrict bias, __global const float* restrict zeros,
                        __global float* restrict out) {
  const int oc0 = get_global_id(0) * 16;
  const int ow0 = get_global_id(1) * PW;
  const int row = get_global_id(2);  // n * OH + oh
  const int n = row / OH, oh = row % OH;
  const __global float* img = in + n * (IH * IW * C);

  f16u acc[PW];
  const f16u bv = LOAD16(bias + oc0);
#pragma unroll
  for (int p = 0; p < PW; p++) acc[p] = bv;

  for (int kh = 0; kh < KH; kh++) {
    const int ih = oh * SH - PT + kh * DH;
    if ((uint)ih >= IH) continue;
    const __global float* line = img + ih * (IW * C);
    f16u x[SPAN];
#pragma unroll
    for (int t = 0; t < SPAN; t++) {
      const int iw = ow0 * SW - PL + t;
      x[t] = load_channels((uint)iw < IW ? line + iw * C : zeros, oc0);
    }
#pragma unroll
    for (int kw = 0; kw < KW; kw++) {
      const f16u wv = LOAD16(w + (kh * KW + kw) * OCP + oc0);
#pragma unroll
      for (int p = 0; p < PW; p++) acc[p] = x[p * SW + kw * DW] * wv + acc[p];
    }
  }
  __global float* o = out + (row * OW + ow0) * OC + oc0;
#pragma unroll
  for (int p = 0; p < PW; p++) {
    if (ow0 + p < OW) {
      if (oc0 + 16 <= OC) STORE16(o + p * OC, act16(acc[p]));
      else store_tail(o + p * OC, act16(acc[p]), OC - oc0);
    }
  }
}
