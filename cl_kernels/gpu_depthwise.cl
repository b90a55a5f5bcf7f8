// GPU-style NHWC depthwise convolution (the "gpu" kernel family: GPUs, Mesa rusticl on
// llvmpipe), standard OpenCL C only. Output channel oc = ic * DM + m.
//
// Each work-item computes V consecutive output channels x a PX x RH patch of output pixels.
// Dimension 0 runs along channels, so neighbouring work-items (SIMD lanes) read and write
// neighbouring floats of the same pixel: coalesced. Global (OC/V, ceil(OW/PX),
// NB*ceil(OH/RH)), padded to whole work-groups (items past the edge return at once; there are no
// barriers). Weights arrive as [KH][KW][OC], bias as [OC]. Taps in the padding read `zeros` (>= V
// floats of 0) through a selected address instead of a branch.
//
// Loads and stores are scalar floats even when V > 1: llvmpipe (Mesa 22) runs every vector
// component of a load as its own loop over the SIMD lanes and is ~4x slower on a float4 than on
// four floats; GPU compilers merge neighbouring scalar accesses themselves. V > 1 needs DM == 1
// and C % V == 0 (the host picks V = 1 otherwise).
//
// A TEMPLATE instantiated as DW_NAME under V and PX, and either K and S (a square K x K filter at
// stride S in both directions, dilation 1: the RH output rows' (RH - 1) * S + K input rows are
// each loaded once, SPAN pixels a row, and every (pixel, tap) product formed from registers) or
// neither (any filter, strides and dilations, arguments, one output row, one load per tap and
// pixel; RH is then 1).

#define DW_CAT_(a, b) a##b
#define DW_CAT(a, b) DW_CAT_(a, b)
#if V == 1
#define vfloat float
#define LOADV(p) (*(p))
#define STOREV(p, v) (*(p) = (v))
#elif V == 2
#define vfloat float2
#define LOADV(p) ((float2)((p)[0], (p)[1]))
#define STOREV(p, v) ((p)[0] = (v).s0, (p)[1] = (v).s1)
#elif V == 4
#define vfloat float4
#define LOADV(p) ((float4)((p)[0], (p)[1], (p)[2], (p)[3]))
#define STOREV(p, v) ((p)[0] = (v).s0, (p)[1] = (v).s1, (p)[2] = (v).s2, (p)[3] = (v).s3)
#else
#error "V must be 1, 2 or 4"
#endif

#define DW_ARGS                                                                                 \
  __global const float* restrict in, __global const float* restrict w,                         \
      __global const float* restrict bias, __global const float* restrict zeros,               \
      __global float* restrict out, const int NB, const int IH, const int IW, const int C,      \
      const int DM, const int OC, const int OH, const int OW, const int PT, const int PL,       \
      const float lo, const float hi

// Clamp (NaN passes, as in TFLite's ActivationFunctionWithMinMax) and store one output.
#define DW_PUT(oh, ow, v)                                                                       \
  do {                                                                                          \
    vfloat c_ = (v);                                                                            \
    c_ = c_ < (vfloat)(lo) ? (vfloat)(lo) : c_;                                                 \
    c_ = c_ > (vfloat)(hi) ? (vfloat)(hi) : c_;                                                 \
    if ((oh) < OH && (ow) < OW) STOREV(out + ((n * OH + (oh)) * OW + (ow)) * OC + oc0, c_);     \
  } while (0)

#ifdef K
#define SPAN ((PX - 1) * S + K)
#define IN_ROWS ((RH - 1) * S + K)
__kernel void DW_NAME(DW_ARGS) {
  const int oc0 = get_global_id(0) * V;
  const int ow0 = get_global_id(1) * PX;
  const int rblocks = (OH + RH - 1) / RH;
  const int n = get_global_id(2) / rblocks;
  const int oh0 = (get_global_id(2) - n * rblocks) * RH;
  if (oc0 >= OC || ow0 >= OW || n >= NB) return;
  const __global float* img = in + n * (IH * IW * C) + oc0 / DM;
  vfloat wv[K * K];
#pragma unroll
  for (int t = 0; t < K * K; t++) wv[t] = LOADV(w + t * OC + oc0);
  const vfloat bv = LOADV(bias + oc0);
  vfloat acc[RH][PX];
#pragma unroll
  for (int r = 0; r < RH; r++) {
#pragma unroll
    for (int p = 0; p < PX; p++) acc[r][p] = bv;
  }
  const int ih0 = oh0 * S - PT, iw0 = ow0 * S - PL;
#pragma unroll
  for (int t = 0; t < IN_ROWS; t++) {
    const int ih = ih0 + t;
    const bool row_in = ih >= 0 && ih < IH;
    vfloat x[SPAN];
#pragma unroll
    for (int s = 0; s < SPAN; s++) {
      const int iw = iw0 + s;
      x[s] = LOADV(row_in && iw >= 0 && iw < IW ? img + (ih * IW + iw) * C : zeros);
    }
#pragma unroll
    for (int r = 0; r < RH; r++) {
      const int kh = t - r * S;  // compile-time once unrolled
      if (kh < 0 || kh >= K) continue;
#pragma unroll
      for (int kw = 0; kw < K; kw++) {
#pragma unroll
        for (int p = 0; p < PX; p++) acc[r][p] = x[p * S + kw] * wv[kh * K + kw] + acc[r][p];
      }
    }
  }
#pragma unroll
  for (int r = 0; r < RH; r++) {
#pragma unroll
    for (int p = 0; p < PX; p++) DW_PUT(oh0 + r, ow0 + p, acc[r][p]);
  }
}
#undef SPAN
#undef IN_ROWS
#else
__kernel void DW_NAME(DW_ARGS, const int KH, const int KW, const int SH, const int SW, const int DH,
                      const int DW) {
  const int oc0 = get_global_id(0) * V;
  const int ow0 = get_global_id(1) * PX;
  const int n = get_global_id(2) / OH;
  const int oh = get_global_id(2) - n * OH;
  if (oc0 >= OC || ow0 >= OW || n >= NB) return;
  const __global float* img = in + n * (IH * IW * C) + oc0 / DM;
  const vfloat bv = LOADV(bias + oc0);
  vfloat acc[PX];
#pragma unroll
  for (int p = 0; p < PX; p++) acc[p] = bv;
  for (int kh = 0; kh < KH; kh++) {
    const int ih = oh * SH - PT + kh * DH;
    const bool row_in = ih >= 0 && ih < IH;
    for (int kw = 0; kw < KW; kw++) {
      const vfloat wt = LOADV(w + (kh * KW + kw) * OC + oc0);
#pragma unroll
      for (int p = 0; p < PX; p++) {
        const int iw = (ow0 + p) * SW - PL + kw * DW;
        acc[p] = LOADV(row_in && iw >= 0 && iw < IW ? img + (ih * IW + iw) * C : zeros) * wt + acc[p];
      }
    }
  }
#pragma unroll
  for (int p = 0; p < PX; p++) DW_PUT(oh, ow0 + p, acc[p]);
}
#endif

#undef vfloat
#undef LOADV
#undef STOREV
#undef DW_ARGS
#undef DW_PUT
