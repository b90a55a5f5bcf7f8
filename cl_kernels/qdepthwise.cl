// int8 / uint8 NHWC DEPTHWISE_CONV_2D, output channel oc = ic * DM + m, 16 output channels per
// work-item as int32 lanes, PW consecutive output pixels of one row. Needs quant.cl before it.
// Per kernel row the SPAN input pixels the PW outputs touch are loaded once, less the input zero
// point (taps in the padding are zero and rows outside are skipped, as the reference kernel
// skips them); weights arrive zero-point-free as int32 [KH][KW][OCP], bias as int32 [OCP].
// The epilogue requantizes per channel (multiplier, left and right shift), adds the output zero
// point and clamps; under TABLE, 8-bit ops folded in after it look each output up in `table`
// (q_table_bytes: 256 raw output bytes, fusion.plan_table_activations; an instantiation of its
// own, so depthwise layers without one compile no lookup code). Global (OCP/16, ceil(OW/PW),
// NB*OH), local 1x1x1.
//
// A TEMPLATE: each instantiation is the kernel QDEPTHWISE_NAME under its macros XT (char|uchar)
// PW KW SW DW [DM1] [REQ_FLOAT] [TABLE] (the rest are arguments), so a partition's depthwise
// layers of every stride and filter width are kernels of one program (one front-end compile).
#ifndef QDEPTHWISE_HELPERS
#define QDEPTHWISE_HELPERS
// The 16 output channels' inputs at pixel `px`, less the zero point: one vector load when the
// depth multiplier is 1 (`dm1`, a constant at each call) and the block is whole, else a
// lane-by-lane gather that stops at the last channel; one function per input type.
#define QDEPTHWISE_LOADER(T)                                                                       \
  inline i16v qdepthwise_load_##T(const __global T* px, int oc0, int C, int DM, int OC, int zp,   \
                                  const int dm1) {                                                 \
    if (dm1 && oc0 + 16 <= C) return LOAD16_INT(T, px + oc0) - zp;                                 \
    i16v v = 0;                                                                                    \
    for (int l = 0; l < 16; l++) v[l] = oc0 + l < OC ? (int)px[(oc0 + l) / DM] - zp : 0;           \
    return v;                                                                                      \
  }
QDEPTHWISE_LOADER(char)
QDEPTHWISE_LOADER(uchar)
#define QDEPTHWISE_CAT2(a, b) a##b
#define QDEPTHWISE_CAT(a, b) QDEPTHWISE_CAT2(a, b)
#endif

#define SPAN ((PW - 1) * SW + (KW - 1) * DW + 1)
#ifdef DM1
#define QDEPTHWISE_DM1 1
#else
#define QDEPTHWISE_DM1 0
#endif

__kernel void QDEPTHWISE_NAME(__global const XT* restrict in, __global const int* restrict w,
                              __global const int* restrict bias,
#ifdef REQ_FLOAT
                              __global const float* restrict scale32,
#else
                              __global const int* restrict mult,
                              __global const int* restrict lshift, __global const int* restrict rshift,
#endif
                              __global XT* restrict out, __global const int* restrict table,
                              const int IH, const int IW, const int C, const int DM, const int OC,
                              const int OH, const int OW, const int KH, const int SH, const int DH,
                              const int PT, const int PL, const int in_zp, const int out_zp, const int lo,
                              const int hi) {
  const int oc0 = get_global_id(0) * 16;
  const int ow0 = get_global_id(1) * PW;
  const int row = get_global_id(2);  // n * OH + oh
  const int n = row / OH, oh = row % OH;
  const int ocp = get_global_size(0) * 16;
  const __global XT* img = in + n * (IH * IW * C);

  i16v acc[PW];
  const i16v b = LOADI16(bias + oc0);
#pragma unroll
  for (int p = 0; p < PW; p++) acc[p] = b;

  for (int kh = 0; kh < KH; kh++) {
    const int ih = oh * SH - PT + kh * DH;
    if ((uint)ih >= (uint)IH) continue;
    const __global XT* line = img + ih * (IW * C);
    i16v x[SPAN];
#pragma unroll
    for (int t = 0; t < SPAN; t++) {
      const int iw = ow0 * SW - PL + t;
      x[t] = (uint)iw < (uint)IW
                 ? QDEPTHWISE_CAT(qdepthwise_load_, XT)(line + iw * C, oc0, C, DM, OC, in_zp, QDEPTHWISE_DM1)
                 : (i16v)(0);
    }
#pragma unroll
    for (int kw = 0; kw < KW; kw++) {
      const i16v wv = LOADI16(w + (kh * KW + kw) * ocp + oc0);
#pragma unroll
      for (int p = 0; p < PW; p++) acc[p] = x[p * SW + kw * DW] * wv + acc[p];
    }
  }
#ifdef REQ_FLOAT
  const f16v fs = LOAD16(scale32 + oc0);
#else
  const i16v m = LOADI16(mult + oc0), l = LOADI16(lshift + oc0), r = LOADI16(rshift + oc0);
#endif
  __global XT* o = out + (row * OW + ow0) * OC + oc0;
#pragma unroll
  for (int p = 0; p < PW; p++) {
    if (ow0 + p < OW) {
#ifdef REQ_FLOAT
      const i16v v = q_requantize_float16(acc[p], fs, out_zp, lo, hi);
#else
      const i16v v = q_requantize_fixed16(acc[p], m, l, r, out_zp, lo, hi);
#endif
      if (oc0 + 16 <= OC) {
        STORE16_BYTES(o + p * OC, v);
      } else {
        for (int t = 0; t < OC - oc0; t++) o[p * OC + t] = (XT)v[t];
      }
#ifdef TABLE
      q_table_bytes((__global uchar*)(o + p * OC), OC - oc0 < 16 ? OC - oc0 : 16, table,
                    (XT)(-1) < 0 ? 0x80 : 0);
#endif
    }
  }
}
#undef SPAN
#undef QDEPTHWISE_DM1
