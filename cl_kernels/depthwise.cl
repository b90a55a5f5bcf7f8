// NHWC depthwise convolution, output channel oc = ic * DM + m, vectorised over 16 output
// channels. Each work-item computes PW consecutive output pixels of one row x 16 channels.
// Weights arrive packed as [KH][KW][OCP] (zero-padded), bias as [OCP]. Taps in the padding read
// `zeros` (>= OCP floats of 0). With `post` (2 or 3, common.cl's post16), a folded HARD_SWISH or
// swish after the clamp (no PRELU here: its slopes run as a channel_map after). Every size is an
// argument; global size (OCP/16, ceil(OW/PW), NB*OH), local 1x1x1.
//
// A TEMPLATE instantiated per fast filter geometry (KW, SW; dilation 1) inside one program as
// DEPTHWISE_NAME (kernels.DEPTHWISE_FAST), for depth multiplier 1 and C >= 16 channels: per kernel
// row it loads the SPAN input pixels its PW outputs touch once, then forms every (pixel, tap)
// product from registers. The last channel block is shifted back to end at channel C and the
// last pixel block back to end at OW (overlaps computed and stored twice, with equal values), so
// every load and store is a whole vector; only rows narrower than PW take a rolled edge path.
// Every other case runs depthwise_any at the end (one load per tap, lane gathers, tails).
#ifndef DEPTHWISE_HELPERS
#define DEPTHWISE_HELPERS
// 16 output channels' inputs at pixel `px`: with dm == 1 the block's channels (a vector load
// when it is whole, else its C - oc0 < 16 floats and zeros), else a lane-by-lane gather that
// stops at the tensor's last channel (a division per lane only where dm > 1: with 4 channels
// at stride 2, a division for each of 16 lanes per tap cost 0.29 ms on a 50x50 layer).
inline f16u load_channels(const __global float* px, int oc0, int C, int dm, int OC) {
  if (dm == 1) return load_upto(px + oc0, C - oc0);
  f16u v = 0.0f;
  for (int l = 0; l < 16 && oc0 + l < OC; l++) v[l] = px[(oc0 + l) / dm];
  return v;
}
#endif

#define SPAN ((PW - 1) * SW + KW)

__kernel void DEPTHWISE_NAME(__global const float* restrict in, __global const float* restrict w,
                             __global const float* restrict bias, __global const float* restrict zeros,
                             __global float* restrict out, const int NB, const int IH, const int IW,
                             const int C, const int OH, const int OW, const int KH, const int SH,
                             const int PT, const int PL, const float lo, const float hi,
                             const int cbn, const int post) {
  const int cb0 = get_global_id(0) * cbn;  // this item's first 16-channel block
  const int cb1 = (cb0 + cbn) * 16 < C ? cb0 + cbn : (C + 15) / 16;
  const int og = get_global_id(1) * PW;
  const int ow0 = OW >= PW && og > OW - PW ? OW - PW : og;
  const int rows = (OH + RH - 1) / RH;  // row blocks per image
  const int rb = get_global_id(2);
  const int n = NB == 1 ? 0 : rb / rows;
  const int og2 = (NB == 1 ? rb : rb % rows) * RH;
  const int oh0 = OH >= RH && og2 > OH - RH ? OH - RH : og2;
  const int iw0 = ow0 * SW - PL, ih0 = oh0 * SH - PT;
  const int in_rows = (RH - 1) * SH + KH;
  for (int cb = cb0; cb < cb1; cb++) {
    const int oc0 = cb * 16 > C - 16 ? C - 16 : cb * 16;
    const __global float* img = in + n * (IH * IW * C) + oc0;
    f16u acc[RH][PW];
    const f16u bv = LOAD16(bias + oc0);
#pragma unroll
    for (int r = 0; r < RH; r++) {
#pragma unroll
      for (int p = 0; p < PW; p++) acc[r][p] = bv;
    }
    for (int t = 0; t < in_rows; t++) {
      const int ih = ih0 + t;
      if ((uint)ih >= (uint)IH) continue;
      const __global float* line = img + ih * (IW * C);
      f16u x[SPAN];
#pragma unroll
      for (int s = 0; s < SPAN; s++) {
        const int iw = iw0 + s;
        x[s] = LOAD16((uint)iw < (uint)IW ? line + iw * C : zeros);
      }
#pragma unroll
      for (int r = 0; r < RH; r++) {
        const int kh = t - r * SH;  // this input row's filter row for output row r
        if ((uint)kh >= (uint)KH) continue;
#pragma unroll
        for (int kw = 0; kw < KW; kw++) {
          const f16u wv = LOAD16(w + (kh * KW + kw) * C + oc0);
#pragma unroll
          for (int p = 0; p < PW; p++) acc[r][p] = x[p * SW + kw] * wv + acc[r][p];
        }
      }
    }
    __global float* o = out + ((n * OH + oh0) * OW + ow0) * C + oc0;
    if (!post && OW >= PW && OH >= RH) {
#pragma unroll
      for (int r = 0; r < RH; r++) {
#pragma unroll
        for (int p = 0; p < PW; p++) STORE16(o + (r * OW + p) * C, clamp16(acc[r][p], lo, hi));
      }
    } else {  // a post op, or an image smaller than the tile: through a private copy, in rolled loops
      f16u tt[RH][PW];
#pragma unroll
      for (int r = 0; r < RH; r++) {
#pragma unroll
        for (int p = 0; p < PW; p++) tt[r][p] = acc[r][p];
      }
#pragma unroll 1
      for (int r = 0; r < RH && r < OH; r++) {
#pragma unroll 1
        for (int p = 0; p < PW && p < OW; p++) {
          f16u v = clamp16(tt[r][p], lo, hi);
          if (post) v = post16(v, zeros, post);
          STORE16(o + (r * OW + p) * C, v);
        }
      }
    }
  }
}
#undef SPAN

#ifndef DEPTHWISE_ANY
#define DEPTHWISE_ANY
#define PW_ANY 8
// Any filter width fw, stride sw and dilation dw along W (the template's KW, SW are macros,
// hence the other names): up to PW_ANY pixels x 16 channels, one load per tap.
__kernel void depthwise_any(__global const float* restrict in, __global const float* restrict w,
                            __global const float* restrict bias, __global const float* restrict zeros,
                            __global float* restrict out, const int NB, const int IH, const int IW,
                            const int C,
                            const int DM, const int OC, const int OCP, const int OH, const int OW,
                            const int KH, const int SH, const int DH, const int PT, const int PL,
                            const float lo, const float hi, const int fw, const int sw, const int dw,
                            const int post) {
  const int oc0 = get_global_id(0) * 16;
  const int ow0 = get_global_id(1) * PW_ANY;
  const int row = get_global_id(2);
  const int n = NB == 1 ? 0 : row / OH, oh = NB == 1 ? row : row % OH;
  const __global float* img = in + n * (IH * IW * C);
  f16u acc[PW_ANY];
  const f16u bv = LOAD16(bias + oc0);
#pragma unroll
  for (int p = 0; p < PW_ANY; p++) acc[p] = bv;
  for (int kh = 0; kh < KH; kh++) {
    const int ih = oh * SH - PT + kh * DH;
    if ((uint)ih >= (uint)IH) continue;
    const __global float* line = img + ih * (IW * C);
    for (int kw = 0; kw < fw; kw++) {
      const f16u wv = LOAD16(w + (kh * fw + kw) * OCP + oc0);
#pragma unroll
      for (int p = 0; p < PW_ANY; p++) {
        const int iw = (ow0 + p) * sw - PL + kw * dw;
        acc[p] = load_channels((uint)iw < (uint)IW ? line + iw * C : zeros, oc0, C, DM, OC) * wv + acc[p];
      }
    }
  }
  __global float* o = out + (row * OW + ow0) * OC + oc0;
  f16u t[PW_ANY];
#pragma unroll
  for (int p = 0; p < PW_ANY; p++) t[p] = acc[p];
  const int pixels = OW - ow0 < PW_ANY ? OW - ow0 : PW_ANY;
#pragma unroll 1
  for (int p = 0; p < pixels; p++) {
    f16u v = clamp16(t[p], lo, hi);
    if (post) v = post16(v, zeros, post);
    store_upto(o + p * OC, v, OC - oc0);
  }
}
#endif

#ifndef DEPTHWISE_ROWS
#define DEPTHWISE_ROWS
#define PV_ROWS 4
// Depth multiplier 1 with C dividing 16 (1, 2, 4 or 8 channels: MediaPipe's landmark models run
// 3x3 depthwise layers of 8 channels at 256x256), stride 1 and dilation 1 along W. An output row
// is OW * C contiguous floats, and lane l of a vector starting at a multiple of 16 is channel
// l % C, so column tap kw reads the input row at the same flat offset shifted by (kw - PL) * C:
// whole-vector loads and stores where depthwise_any would gather 16 lanes of 16 channels, half of
// them padding. A flat input offset lies in [0, IW * C) exactly when its pixel lies in the row, so
// only vectors crossing a row's ends load lane by lane (zeros outside). Weights and bias arrive as
// 16-lane patterns (channel l % C in lane l), [KH][fw][16] and [16]. Each work-item computes
// PV_ROWS vectors of `rpi` consecutive output rows. Global (ceil(OW * C / (16 * PV_ROWS)),
// ceil(NB * OH / rpi)), local 1x1.
__kernel void depthwise_rows(__global const float* restrict in, __global const float* restrict w,
                             __global const float* restrict bias, __global float* restrict out,
                             const int NB, const int IH, const int IW, const int C, const int OH,
                             const int OW, const int KH, const int fw, const int SH, const int DH,
                             const int PT, const int PL, const float lo, const float hi, const int rpi,
                             const int post) {
  const int row_len = OW * C, in_len = IW * C;
  const int f0 = get_global_id(0) * (16 * PV_ROWS);
  const int r0 = get_global_id(1) * rpi;
  const int r1 = r0 + rpi < NB * OH ? r0 + rpi : NB * OH;
  const f16u bv = LOAD16(bias);
  for (int row = r0; row < r1; row++) {
    const int n = row / OH, oh = row % OH;
    f16u acc[PV_ROWS];
#pragma unroll
    for (int v = 0; v < PV_ROWS; v++) acc[v] = bv;
    for (int kh = 0; kh < KH; kh++) {
      const int ih = oh * SH - PT + kh * DH;
      if ((uint)ih >= (uint)IH) continue;
      const __global float* line = in + (n * IH + ih) * in_len;
      for (int kw = 0; kw < fw; kw++) {
        const f16u wv = LOAD16(w + (kh * fw + kw) * 16);
        const int shift = (kw - PL) * C;
#pragma unroll
        for (int v = 0; v < PV_ROWS; v++) {
          const int o = f0 + v * 16 + shift;
          f16u x;
          if (o >= 0 && o + 16 <= in_len) {
            x = LOAD16(line + o);
          } else {
            x = 0.0f;
            for (int l = 0; l < 16; l++) {
              if ((uint)(o + l) < (uint)in_len) x[l] = line[o + l];
            }
          }
          acc[v] = x * wv + acc[v];
        }
      }
    }
    __global float* orow = out + row * row_len;
    f16u t[PV_ROWS];
#pragma unroll
    for (int v = 0; v < PV_ROWS; v++) t[v] = acc[v];
#pragma unroll 1
    for (int v = 0; v < PV_ROWS && f0 + v * 16 < row_len; v++) {
      const int f = f0 + v * 16;
      f16u y = clamp16(t[v], lo, hi);
      if (post) y = post16(y, bias, post);
      if (f + 16 <= row_len) {
        STORE16(orow + f, y);
      } else {
        store_upto(orow + f, y, row_len - f);
      }
    }
  }
}
#endif
