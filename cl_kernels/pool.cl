// NHWC AVERAGE_POOL_2D / MAX_POOL_2D, every size an ARGUMENT (one program for all shapes).
// A work-item computes one output pixel x 16 channels. The window starts at (oh*SH - PT,
// ow*SW - PL) in input coordinates and is clipped to the padded input [-EPT, IH + EPB) x
// [-EPL, IW + EPR), as TFLite clips to the input: cells of TFLite's own padding take no part.
// EPT.. are an explicit zero PAD folded into the pool (0 without one): its cells count as
// zeros, exactly as the PAD op's output would. Global (ceil(C/16), OW, NB*OH), local 1x1x1.

// The 16 channels at `p` (the first `n` of them when fewer are left; the rest read as 0).
inline f16u load_c(const __global float* p, int n) {
  if (n >= 16) return LOAD16(p);
  f16u v = 0.0f;
  for (int l = 0; l < n; l++) v[l] = p[l];
  return v;
}

inline void store_c(__global float* p, f16u v, int n) {
  if (n >= 16) STORE16(p, v);
  else store_tail(p, v, n);
}

#define POOL_ARGS                                                                                  \
  __global const float* restrict in, __global float* restrict out, const int C, const int IH,     \
      const int IW, const int OH, const int OW, const int FH, const int FW, const int SH,          \
      const int SW, const int PT, const int PL, const int EPT, const int EPB, const int EPL,       \
      const int EPR, const float lo, const float hi

#define POOL_WINDOW                                                                                \
  const int c0 = get_global_id(0) * 16, ow = get_global_id(1), row = get_global_id(2);            \
  const int n = row / OH, oh = row % OH, nc = C - c0;                                              \
  const int h0 = oh * SH - PT, w0 = ow * SW - PL;                                                  \
  const int hs = h0 > -EPT ? h0 : -EPT, he = h0 + FH < IH + EPB ? h0 + FH : IH + EPB;              \
  const int ws = w0 > -EPL ? w0 : -EPL, we = w0 + FW < IW + EPR ? w0 + FW : IW + EPR;              \
  const __global float* img = in + n * (IH * IW * C) + c0;

__kernel void avg_pool(POOL_ARGS) {
  POOL_WINDOW
  f16u acc = 0.0f;
  for (int h = hs; h < he; h++) {
    if ((uint)h >= (uint)IH) continue;  // an explicit-pad row: zeros
    for (int w = ws; w < we; w++) {
      if ((uint)w < (uint)IW) acc += load_c(img + (h * IW + w) * C, nc);
    }
  }
  const float count = (float)((he - hs) * (we - ws));
  f16u v = acc / count;
  v = v < (f16u)(lo) ? (f16u)(lo) : v;
  v = v > (f16u)(hi) ? (f16u)(hi) : v;
  store_c(out + (row * OW + ow) * C + c0, v, nc);
}

__kernel void max_pool(POOL_ARGS) {
  POOL_WINDOW
  f16u acc = -3.402823466e+38f;  // std::numeric_limits<float>::lowest()
  for (int h = hs; h < he; h++) {
    for (int w = ws; w < we; w++) {
      const f16u x = ((uint)h < (uint)IH && (uint)w < (uint)IW) ? load_c(img + (h * IW + w) * C, nc)
                                                                : (f16u)(0.0f);
      acc = x > acc ? x : acc;
    }
  }
  acc = acc < (f16u)(lo) ? (f16u)(lo) : acc;
  acc = acc > (f16u)(hi) ? (f16u)(hi) : acc;
  store_c(out + (row * OW + ow) * C + c0, acc, nc);
}
