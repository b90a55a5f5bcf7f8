// Per-channel maps of a flat NHWC float tensor (channels fastest), 16 values a vector whatever
// the channel count: DEPTHWISE_CONV_2D with a 1x1 kernel, stride 1 and depth multiplier 1
// (y = x * w[c] + b[c]), and PRELU with constant per-channel slopes (y = x >= 0 ? x : x * a[c]),
// or a HARD_SWISH or swish folded into such a depthwise.
// MediaPipe's 8- and 16-channel blocks run both on 128x128 maps, where the general depthwise and
// broadcasting kernels manage a few GB/s.
//
// The host tiles w, b and a to L = lcm(C, 16) values, so the 16 values from flat index i (a
// multiple of 16) take the 16 tiled values from i % L: whole vectors for every C.
// `affine`: apply x * w + b, clamped to [lo, hi] (the depthwise's fused activation); `post`
// (common.cl's post16): then a PRELU's slopes, a HARD_SWISH or a swish, clamped to [plo, phi] (a
// PRELU's own fused activation; a folded op has none). Unbounded clamps are +-inf; NaN passes
// through. A work-item maps `chunk` elements (a multiple of 16) from get_global_id(0) * chunk,
// the last few (< 16) as one partial vector (the tiled values have 16 from any multiple of 16).
// Global (ceil(n / chunk)), local 1.
__kernel void channel_map(__global const float* restrict in, __global const float* restrict w,
                          __global const float* restrict b, __global const float* restrict a,
                          __global float* restrict out, const int n, const int chunk, const int L,
                          const int affine, const int post, const float lo, const float hi,
                          const float plo, const float phi) {
  const int start = get_global_id(0) * chunk;
  const int end = start + chunk < n ? start + chunk : n;
  int t = start % L;
  for (int i = start; i < end; i += 16) {
    f16u v = load_upto(in + i, end - i);
    if (affine) v = clamp16(v * LOAD16(w + t) + LOAD16(b + t), lo, hi);
    if (post) v = clamp16(post16(v, a + t, post), plo, phi);
    store_upto(out + i, v, end - i);
    t = t + 16 == L ? 0 : t + 16;
  }
}
