// NHWC AVERAGE_POOL_2D / MAX_POOL_2D, every size an ARGUMENT (one program for all shapes).
// A work-item computes output pixels x 16 channels (the last 16 shifted back to end at channel C,
// overlapping the block before; 8 or 4 channels a pixel a vector, other counts below 16 one at a
// time). The window starts at (oh*SH - PT,
// ow*SW - PL) in input coordinates and is clipped to the padded input [-EPT, IH + EPB) x
// [-EPL, IW + EPR), as TFLite clips to the input: cells of TFLite's own padding take no part.
// EPT.. are an explicit zero PAD folded into the pool (0 without one): its cells count as
// zeros, exactly as the PAD op's output would. A work-item computes `ppi` consecutive output
// pixels of a row (PoCL pays per work-item: one per pixel cost ~1 us each on 64x64 outputs).
// Global (ceil(C/16), ceil(OW/ppi), NB*OH), local 1x1x1.

#define POOL_ARGS                                                                                  \
  __global const float* restrict in, __global float* restrict out, const int C, const int IH,     \
      const int IW, const int OH, const int OW, const int FH, const int FW, const int SH,          \
      const int SW, const int PT, const int PL, const int EPT, const int EPB, const int EPL,       \
      const int EPR, const float lo, const float hi, const int ppi

// The item's pixels: POOL_PIXELS opens a loop over them that each kernel closes.
#define POOL_PIXELS                                                                                \
  const int cg = get_global_id(0) * 16, row = get_global_id(2);                                   \
  const int c0 = C >= 16 && cg > C - 16 ? C - 16 : cg; /* the last block shifted back: whole */   \
  const int n = row / OH, oh = row % OH, nc = C - c0;                                              \
  const int h0 = oh * SH - PT;                                                                     \
  const int hs = h0 > -EPT ? h0 : -EPT, he = h0 + FH < IH + EPB ? h0 + FH : IH + EPB;              \
  const __global float* img = in + n * (IH * IW * C) + c0;                                         \
  const int ow1 = (get_global_id(1) + 1) * ppi < OW ? (get_global_id(1) + 1) * ppi : OW;          \
  for (int ow = get_global_id(1) * ppi; ow < ow1; ow++) {                                          \
    const int w0 = ow * SW - PL;                                                                   \
    const int ws = w0 > -EPL ? w0 : -EPL, we = w0 + FW < IW + EPR ? w0 + FW : IW + EPR;

// One pixel's C (8 or 4) channels as one VT vector (inside POOL_PIXELS: img, o, hs..we, count).
#define AVG_PIXEL(VT, LOAD, STORE)                                                                 \
  {                                                                                                \
    VT acc = 0.0f;                                                                                 \
    for (int h = hs; h < he; h++) {                                                                \
      if ((uint)h >= (uint)IH) continue;                                                           \
      for (int w = ws; w < we; w++) {                                                              \
        if ((uint)w < (uint)IW) acc += LOAD(0, img + (h * IW + w) * C);                            \
      }                                                                                            \
    }                                                                                              \
    VT v = acc / count;                                                                            \
    v = v < (VT)(lo) ? (VT)(lo) : v;                                                               \
    STORE(v > (VT)(hi) ? (VT)(hi) : v, 0, o);                                                      \
  }
#define MAX_PIXEL(VT, LOAD, STORE)                                                                 \
  {                                                                                                \
    VT acc = -3.402823466e+38f;                                                                    \
    for (int h = hs; h < he; h++) {                                                                \
      for (int w = ws; w < we; w++) {                                                              \
        const VT x = ((uint)h < (uint)IH && (uint)w < (uint)IW) ? LOAD(0, img + (h * IW + w) * C)  \
                                                                : (VT)(0.0f);                      \
        acc = x > acc ? x : acc;                                                                   \
      }                                                                                            \
    }                                                                                              \
    acc = acc < (VT)(lo) ? (VT)(lo) : acc;                                                         \
    STORE(acc > (VT)(hi) ? (VT)(hi) : acc, 0, o);                                                  \
  }

__kernel void avg_pool(POOL_ARGS) {
  POOL_PIXELS
  const float count = (float)((he - hs) * (we - ws));
  __global float* o = out + (row * OW + ow) * C + c0;
  if (C == 8 || C == 4) {  // narrow tensors (MediaPipe's 4- and 8-channel layers): a pixel a vector
    if (C == 8) AVG_PIXEL(float8, vload8, vstore8) else AVG_PIXEL(float4, vload4, vstore4)
    continue;
  }
  if (nc < 16) {  // the last channels, one at a time (a vector's lanes one by one cost ~10x more)
    for (int l = 0; l < nc; l++) {
      float acc = 0.0f;
      for (int h = hs; h < he; h++) {
        if ((uint)h >= (uint)IH) continue;
        for (int w = ws; w < we; w++) {
          if ((uint)w < (uint)IW) acc += img[(h * IW + w) * C + l];
        }
      }
      float v = acc / count;
      v = v < lo ? lo : v;  // compares, as the vector path's: NaN passes through
      o[l] = v > hi ? hi : v;
    }
    continue;
  }
  f16u acc = 0.0f;
  for (int h = hs; h < he; h++) {
    if ((uint)h >= (uint)IH) continue;  // an explicit-pad row: zeros
    for (int w = ws; w < we; w++) {
      if ((uint)w < (uint)IW) acc += LOAD16(img + (h * IW + w) * C);
    }
  }
  f16u v = acc / count;
  v = v < (f16u)(lo) ? (f16u)(lo) : v;
  v = v > (f16u)(hi) ? (f16u)(hi) : v;
  STORE16(o, v);
  }
}

__kernel void max_pool(POOL_ARGS) {
  POOL_PIXELS
  __global float* o = out + (row * OW + ow) * C + c0;
  if (C == 8 || C == 4) {  // narrow tensors: a pixel a vector
    if (C == 8) MAX_PIXEL(float8, vload8, vstore8) else MAX_PIXEL(float4, vload4, vstore4)
    continue;
  }
  if (nc < 16) {  // the last channels, one at a time
    for (int l = 0; l < nc; l++) {
      float acc = -3.402823466e+38f;
      for (int h = hs; h < he; h++) {
        for (int w = ws; w < we; w++) {
          const float x = ((uint)h < (uint)IH && (uint)w < (uint)IW) ? img[(h * IW + w) * C + l] : 0.0f;
          acc = x > acc ? x : acc;
        }
      }
      acc = acc < lo ? lo : acc;
      o[l] = acc > hi ? hi : acc;
    }
    continue;
  }
  f16u acc = -3.402823466e+38f;  // std::numeric_limits<float>::lowest()
  for (int h = hs; h < he; h++) {
    for (int w = ws; w < we; w++) {
      const f16u x = ((uint)h < (uint)IH && (uint)w < (uint)IW) ? LOAD16(img + (h * IW + w) * C)
                                                                : (f16u)(0.0f);
      acc = x > acc ? x : acc;
    }
  }
  acc = acc < (f16u)(lo) ? (f16u)(lo) : acc;
  acc = acc > (f16u)(hi) ? (f16u)(hi) : acc;
  STORE16(o, acc);
  }
}
