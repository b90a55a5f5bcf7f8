// RESIZE_BILINEAR on NHWC tensors. The per-axis maths (TFLite's source coordinates, neighbours and
// fractions) runs once on the host (teflon_py.fallback.resize): TAB holds y0[oh] y1[oh] x0[ow]
// x1[ow], then, for the integer kernels, fy[oh] fx[ow] in 1/1024 units; FRAC holds dy[oh] dx[ow]
// for the float ones. A work-item blends `ppi` output pixels of `c` channels; global
// (ceil(pixels / ppi)). Sizes are kernel arguments: one program serves every shape.
//
// Float kernels: TFLite's float32 blend, term by term and left to right, never contracted to FMAs
// (uint8 rounds the blend half away from zero, which must be bit-exact). Integer kernels (int8,
// int16): LiteRT's 2^20-scaled blend in 64 bits, rounded half away from zero, C division, wrapped
// to the type by the cast.
#pragma OPENCL FP_CONTRACT OFF

#define PIXEL_CORNERS(T)                                                                           \
  const int x = p % ow;                                                                            \
  const int q = p / ow;                                                                            \
  const int y = q % oh;                                                                            \
  const int n = q / oh;                                                                            \
  const __global T* row0 = S + (n * h + TAB[y]) * w * c;                                           \
  const __global T* row1 = S + (n * h + TAB[oh + y]) * w * c;                                      \
  const int x0 = TAB[2 * oh + x] * c, x1 = TAB[2 * oh + ow + x] * c;                               \
  const __global T* a = row0 + x0;                                                                 \
  const __global T* b = row1 + x0;                                                                 \
  const __global T* e = row0 + x1;                                                                 \
  const __global T* f = row1 + x1;                                                                 \
  __global T* d = D + p * c;

#define BILINEAR_FLOAT(SFX, T, STORE)                                                              \
  __kernel void bilinear_##SFX(__global const T* restrict S, __global const int* restrict TAB,     \
                               __global const float* restrict FRAC, __global T* restrict D,        \
                               const int pixels, const int ppi, const int oh, const int ow,        \
                               const int h, const int w, const int c) {                            \
    const int p0 = get_global_id(0) * ppi;                                                         \
    const int p1 = p0 + ppi < pixels ? p0 + ppi : pixels;                                          \
    for (int p = p0; p < p1; p++) {                                                                \
      PIXEL_CORNERS(T)                                                                             \
      const float dy = FRAC[y], dx = FRAC[oh + x];                                                 \
      const float wy = 1.0f - dy, wx = 1.0f - dx;                                                  \
      for (int ch = 0; ch < c; ch++) {                                                             \
        float v = (float)a[ch] * wy * wx;                                                          \
        v = v + (float)b[ch] * dy * wx;                                                            \
        v = v + (float)e[ch] * wy * dx;                                                            \
        v = v + (float)f[ch] * dy * dx;                                                            \
        d[ch] = STORE(v);                                                                          \
      }                                                                                            \
    }                                                                                              \
  }

#define STORE_F32(v) (v)
#define STORE_U8(v) ((uchar)(int)round(v))

BILINEAR_FLOAT(f32, float, STORE_F32)
BILINEAR_FLOAT(u8, uchar, STORE_U8)

#define BILINEAR_INT(SFX, T)                                                                       \
  __kernel void bilinear_##SFX(__global const T* restrict S, __global const int* restrict TAB,     \
                               __global T* restrict D, const int pixels, const int ppi,            \
                               const int oh, const int ow, const int h, const int w,               \
                               const int c) {                                                      \
    const int p0 = get_global_id(0) * ppi;                                                         \
    const int p1 = p0 + ppi < pixels ? p0 + ppi : pixels;                                          \
    for (int p = p0; p < p1; p++) {                                                                \
      PIXEL_CORNERS(T)                                                                             \
      const long fy = TAB[2 * oh + 2 * ow + y], fx = TAB[3 * oh + 2 * ow + x];                     \
      const long wy = 1024 - fy, wx = 1024 - fx;                                                   \
      for (int ch = 0; ch < c; ch++) {                                                             \
        long v = a[ch] * wy * wx + b[ch] * fy * wx + e[ch] * wy * fx + f[ch] * fy * fx;            \
        v += v > 0 ? (1L << 19) : -(1L << 19);                                                     \
        d[ch] = (T)(v / (1L << 20));                                                               \
      }                                                                                            \
    }                                                                                              \
  }

BILINEAR_INT(i8, char)
BILINEAR_INT(i16, short)
