// GPU-style NHWC AVERAGE_POOL_2D / MAX_POOL_2D (the "gpu" kernel family), standard OpenCL C:
// one output float per work-item, dimension 0 along channels (adjacent work-items read adjacent
// floats), global (C, OW, NB*OH) padded to whole work-groups (items past the edge return). The
// window and its clipping are pool.cl's: it starts at (oh*SH - PT, ow*SW - PL) and is clipped to
// the padded input [-EPT, IH + EPB) x [-EPL, IW + EPR), EPT.. an explicit zero PAD folded in
// (its cells count as zeros); cells of TFLite's own padding take no part. Sums run h-major in
// order, as pool.cl's do.

#define GPU_POOL_ARGS                                                                              \
  __global const float* restrict in, __global float* restrict out, const int NB, const int C,     \
      const int IH, const int IW, const int OH, const int OW, const int FH, const int FW,          \
      const int SH, const int SW, const int PT, const int PL, const int EPT, const int EPB,        \
      const int EPL, const int EPR, const float lo, const float hi

#define GPU_POOL_WINDOW                                                                            \
  const int c = get_global_id(0), ow = get_global_id(1), row = get_global_id(2);                  \
  if (c >= C || ow >= OW || row >= NB * OH) return;                                                \
  const int n = row / OH, oh = row - n * OH;                                                       \
  const int h0 = oh * SH - PT, w0 = ow * SW - PL;                                                  \
  const int hs = h0 > -EPT ? h0 : -EPT, he = h0 + FH < IH + EPB ? h0 + FH : IH + EPB;              \
  const int ws = w0 > -EPL ? w0 : -EPL, we = w0 + FW < IW + EPR ? w0 + FW : IW + EPR;              \
  const __global float* img = in + n * (IH * IW * C) + c;

__kernel void avg_pool_gpu(GPU_POOL_ARGS) {
  GPU_POOL_WINDOW
  float acc = 0.0f;
  for (int h = hs; h < he; h++) {
    if (h < 0 || h >= IH) continue;  // an explicit-pad row: zeros
    for (int w = ws; w < we; w++) {
      if (w >= 0 && w < IW) acc += img[(h * IW + w) * C];
    }
  }
  float v = acc / (float)((he - hs) * (we - ws));
  v = v < lo ? lo : v;
  v = v > hi ? hi : v;
  out[(row * OW + ow) * C + c] = v;
}

__kernel void max_pool_gpu(GPU_POOL_ARGS) {
  GPU_POOL_WINDOW
  float acc = -3.402823466e+38f;  // std::numeric_limits<float>::lowest()
  for (int h = hs; h < he; h++) {
    for (int w = ws; w < we; w++) {
      const float x = (h >= 0 && h < IH && w >= 0 && w < IW) ? img[(h * IW + w) * C] : 0.0f;
      acc = x > acc ? x : acc;
    }
  }
  acc = acc < lo ? lo : acc;
  acc = acc > hi ? hi : acc;
  out[(row * OW + ow) * C + c] = acc;
}
