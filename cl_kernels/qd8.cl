// XNNPACK's qd8 (ExecuTorch's dynamically quantized linear layers): DYNAMIC_QUANTIZE, per-row
// int8 quantization chosen at run time, and DYNAMIC_FULLY_CONNECTED over its output. Both match
// the NumPy fallback bit for bit (teflon_py/quant/dynamic.py, teflon_py/fallback/dynamic_quant.py):
// every float32 operation is the fallback's, in its order, so the program is built with
// -cl-fp32-correctly-rounded-divide-sqrt, contraction into FMAs is off, and rint rounds halves to
// even. Plain OpenCL C 1.2: standard vector types, no compiler extensions.
#pragma OPENCL FP_CONTRACT OFF

// One work-item per row of `depth` values: the row's range widened to include 0, its scale and
// nudged zero point (written to params[row] as two floats), then its int8 values.
//   scale = (hi - lo) / 255 (1 where that is 0); zero = the rounded end (min or max) whose
//   rounding error is smaller, clamped to [-128, 127]; q = clamp(rint(x / scale) + zero).
// rint(x / scale) + zero is formed in float32 where the fallback adds in float64: both sums are
// exact while in [-128, 127] (|zero| <= 128), and outside it rounding is monotone, so the clamp
// gives the same byte. NaN inputs are outside the contract (the fallback's zero point is then an
// undefined integer conversion). Global (rows), local 1.
__kernel void qd8_quantize(__global const float* restrict x, __global char* restrict q,
                           __global float* restrict params, const int rows, const int depth) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  const __global float* xr = x + r * depth;
  float lo = 0.0f, hi = 0.0f;
  for (int k = 0; k < depth; k++) {
    const float v = xr[k];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  float scale = (hi - lo) / 255.0f;
  scale = scale == 0.0f ? 1.0f : scale;
  const float lq = lo / scale, hq = hi / scale;
  const float from_min = -128.0f - lq, from_max = 127.0f - hq;
  const float err_min = 128.0f + fabs(lq), err_max = 127.0f + fabs(hq);
  float zero = rint(err_min < err_max ? from_min : from_max);
  zero = zero < -128.0f ? -128.0f : (zero > 127.0f ? 127.0f : zero);
  params[2 * r] = scale;
  params[2 * r + 1] = (float)convert_int(zero);  // through int, as the fallback: -0 becomes 0
  __global char* qr = q + r * depth;
  for (int k = 0; k < depth; k++) {
    float v = rint(xr[k] / scale) + zero;
    v = v < -128.0f ? -128.0f : (v > 127.0f ? 127.0f : v);
    qr[k] = (char)convert_int(v);
  }
}

// out[r][u] = clamp(float(sum_k (q[r][k] - zp_r) * w'[u][k]) * scale_r * wscale[u] (+ bias[u])),
// w' the weights less their zero point. The integer sum is exact: the kernel accumulates
// q * w' in int32 (the host checks 128 * sum_k |w'[u][k]| fits) and subtracts zp_r * wsum[u] in
// 64 bits, the fallback's int64 accumulator; its conversion to float rounds to nearest even, as
// NumPy's does; then the two products and the bias in the fallback's order.
//
// Each work-item: MR rows x 16 units, int16 accumulators. Weights (host-packed, units zero-padded
// to a multiple of 16): [UP/16][depth][16] of WT (char where w' fits int8, else short); wsum,
// wscale padded to UP; bias (HAS_BIAS) is read only for real units, so it may be a run-time
// tensor. Rows past the last recompute it and store nothing. lo/hi: the clamp (+-inf when
// unbounded; NaN passes through as NumPy's clip lets it). Global (UP/16, ceil(rows/MR)), local 1x1.
// Macros: WT (char|short), MR, [HAS_BIAS]; without WT the program holds qd8_quantize only.
#ifdef WT
#define WT16 CAT16(WT)
#define CAT16(t) CAT16_(t)
#define CAT16_(t) t##16

__kernel void qd8_fc(__global const char* restrict q, __global const float* restrict params,
                     __global const WT16* restrict w, __global const int* restrict wsum,
                     __global const float* restrict wscale,
#ifdef HAS_BIAS
                     __global const float* restrict bias,
#endif
                     __global float* restrict out, const int rows, const int depth, const int units,
                     const float lo, const float hi) {
  const int ub = get_global_id(0);
  const int r0 = get_global_id(1) * MR;
  const __global WT16* wp = w + ub * depth;
  const __global char* qr[MR];
  int16 acc[MR];
  for (int i = 0; i < MR; i++) {
    const int r = r0 + i < rows ? r0 + i : rows - 1;
    qr[i] = q + r * depth;
    acc[i] = (int16)(0);
  }
  for (int k = 0; k < depth; k++) {
    const int16 wv = convert_int16(wp[k]);
    for (int i = 0; i < MR; i++) acc[i] += (int)qr[i][k] * wv;
  }
  const int u0 = ub * 16;
  const int n = units - u0 < 16 ? units - u0 : 16;
  for (int i = 0; i < MR; i++) {
    const int r = r0 + i;
    if (r >= rows) break;
    const float s = params[2 * r];
    const long zp = (long)params[2 * r + 1];  // truncation, as NumPy's astype(int64)
    int a[16];
    vstore16(acc[i], 0, a);
    __global float* o = out + r * units + u0;
    for (int l = 0; l < n; l++) {
      const long t = (long)a[l] - zp * (long)wsum[u0 + l];
      float v = convert_float_rte(t);
      v = v * s;
      v = v * wscale[u0 + l];
#ifdef HAS_BIAS
      v = v + bias[u0 + l];
#endif
      v = v < lo ? lo : v;
      v = v > hi ? hi : v;
      o[l] = v;
    }
  }
}
#endif  // WT
