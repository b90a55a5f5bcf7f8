// int8 / uint8 NHWC convolution as an implicit GEMM with int32 accumulation and the requantization
// in the epilogue: CONV_2D (any kernel, stride, dilation, groups as one launch each),
// FULLY_CONNECTED (rows as a 1 x rows image, 1x1 kernel) and 1x1 convolutions.
// Needs quant.cl before it.
//
// Each work-item computes PW output pixels x OCB = 16 * NV output channels in PW * NV int32x16
// registers. Zero points are folded on the host: the kernel multiplies x' = x ^ FLIP (the input
// byte read as unsigned: x + 128 for int8, x for uint8) by the zero-point-free weights, and the
// bias already holds bias - (zero point + flip offset) * sum of weights. Taps in the padding read
// `zpad` (the input zero point), so they add exactly what the fold took away.
//
// Weights (host-packed, output channels zero-padded to OCP, input channels to ICQ quads):
//   W8 (they fit int8): [OCP/OCB][KH*KW][ICQ][OCB][4] chars, four input channels per output
//     channel side by side: AVX-512 VNNI's vpdpbusd takes 4 (unsigned x, signed w) pairs per lane;
//     other CPUs under clang's vector extensions unpack the quads with 64-byte shuffles, other
//     devices (standard OpenCL C: no 64-wide vectors) read each quad as an int and sign-extend
//     its bytes by shifts.
//   else (uint8 weights less their zero point): [OCP/OCB][KH*KW][IC][OCB] shorts.
// Requantization: per output channel multiplier / left / right shift (CONV_2D), or, with epi & 2
// (a kernel argument, so convolutions and FULLY_CONNECTED share the kernel), FULLY_CONNECTED's
// round(double(acc) * scale) (LiteRT's reference kernel) in integers from the same three int
// arrays (q_requantize_exact16 in quant.cl: no fp64 needed), or, with REQ_FLOAT, XNNPACK's
// float32 rule (q_requantize_float16).
// A residual ADD folded in (the fixed-point requantization only; epi & 1, so a partition's convs
// with and without one run the same kernel and PoCL compiles it once; its constants in `radd`):
// after the conv's own clamp, TFLite's quantized ADD of the conv's int8 value v and the other
// operand r:
// MBQM((v + off1) << 20, m1, -s1) + MBQM((r + off2) << 20, m2, -s2) (s1, s2 right shifts),
// requantized by (rm, rshift_add), plus rzo, clamped.
// 8-bit ops folded in after all that (epi & 4; fusion.plan_table_activations: LOGISTIC, TANH,
// HARD_SWISH, a swish's LOGISTIC and MUL): one lookup per output in a 256-entry table of raw
// output bytes (q_table_bytes), exact by construction.
// Macros: XT (char|uchar) XT_IS_SIGNED WT (char|short) NV PW [W8] [QCONV_MADD_LAYOUT] [REQ_FLOAT] [QCONV_PORTABLE: the
// shuffle path even where the device has VNNI, for tests]; every size is an argument, so one
// program per (types, blocking) serves every shape. Global (OCP/OCB, ceil(NPIX/PW)), local 1x1.
// Measured here (AVX-512 VNNI through clang's __builtin_ia32_vpdpbusd512, 2 cores): ~1.0-1.3
// TOP/s on 1x1 and 3x3 layers with K >= 128; the portable path ~0.29 TOP/s. With small K (16-32)
// the exact requantization (a 64-bit product per output) costs as much as the MACs.
#define OCB (16 * NV)
#ifdef TEFLON_CLANG_VECTORS
typedef char c64v __attribute__((ext_vector_type(64)));
typedef char c64u __attribute__((ext_vector_type(64), aligned(1)));
#endif

#if XT_IS_SIGNED
#define FLIP 0x80
#else
#define FLIP 0
#endif
#define FLIP4 ((int)(FLIP * 0x01010101u))

#if defined(W8) && defined(TEFLON_CLANG_VECTORS) && defined(__AVX512VNNI__) && !defined(QCONV_PORTABLE)
#define QCONV_VNNI 1
#elif defined(W8) && defined(TEFLON_CLANG_VECTORS) && defined(__AVX2__) && !defined(QCONV_PORTABLE)
#define QCONV_MADD 1
#endif
#if defined(QCONV_MADD_LAYOUT) && !defined(QCONV_MADD)
#error "weights packed for the AVX2 vpmaddwd loop, which this device does not compile"
#endif

#if defined(W8)
#ifdef QCONV_VNNI
// vpdpbusd: acc += sum over the quad of (uchar)x * (char)w, exact in int32.
#define QUAD_STEP(xq, q)                                                                           \
  {                                                                                                \
    i16v wv[NV];                                                                                   \
    _Pragma("unroll") for (int j = 0; j < NV; j++) wv[j] = LOADI16(wp + ((q) * OCB + j * 16) * 4); \
    _Pragma("unroll") for (int p = 0; p < PW; p++) {                                               \
      const i16v xv = (i16v)(xq[p]);                                                               \
      _Pragma("unroll") for (int j = 0; j < NV; j++) acc[p][j] = __builtin_ia32_vpdpbusd512(acc[p][j], xv, wv[j]); \
    }                                                                                              \
  }
#elif defined(QCONV_MADD)
// AVX2 (no VNNI): vpmaddwd multiplies 16 int16 pairs and adds each pair into an int32 lane, so
// a quad is two pairs: the inputs (x0, x1) and (x2, x3) broadcast as int16 pairs, the weights
// of 8 output channels' (w0, w1) and (w2, w3) pairs, sign-extended from bytes. uint8 x int8
// products and a pair's sum stay far inside int32: exact. With QCONV_MADD_LAYOUT the host packed
// each 64-byte block of 16 channels' quads as [channel half][pair][8 channels][2] (qspecs), so
// the four weight vectors are plain 16-byte loads; without it (a host that did not know the
// path) one shuffle per quad and 16 channels gathers the pairs, ~1.5x slower.
typedef short s16v __attribute__((ext_vector_type(16)));
typedef int i8v __attribute__((ext_vector_type(8)));
typedef char c16u __attribute__((ext_vector_type(16), aligned(1)));
#ifdef QCONV_MADD_LAYOUT
#define W_HALF(wb, k) __builtin_convertvector(*(const __global c16u*)((wb) + 16 * (k)), s16v)
#define W_VECTORS(wb)                                                                              \
  const s16v w01a = W_HALF(wb, 0), w23a = W_HALF(wb, 1), w01b = W_HALF(wb, 2), w23b = W_HALF(wb, 3);
#else
#define W_PAIRS(v, c0, t)                                                                          \
  __builtin_convertvector(__builtin_shufflevector(v, v, 4 * (c0) + (t), 4 * (c0) + (t) + 1,          \
      4 * (c0) + (t) + 4, 4 * (c0) + (t) + 5, 4 * (c0) + (t) + 8, 4 * (c0) + (t) + 9,                \
      4 * (c0) + (t) + 12, 4 * (c0) + (t) + 13, 4 * (c0) + (t) + 16, 4 * (c0) + (t) + 17,             \
      4 * (c0) + (t) + 20, 4 * (c0) + (t) + 21, 4 * (c0) + (t) + 24, 4 * (c0) + (t) + 25,             \
      4 * (c0) + (t) + 28, 4 * (c0) + (t) + 29), s16v)
#define W_VECTORS(wb)                                                                              \
  const c64v wq = *(const __global c64u*)(wb);                                                     \
  const s16v w01a = W_PAIRS(wq, 0, 0), w23a = W_PAIRS(wq, 0, 2);                                  \
  const s16v w01b = W_PAIRS(wq, 8, 0), w23b = W_PAIRS(wq, 8, 2);
#endif
#define QUAD_STEP(xq, q)                                                                           \
  {                                                                                                \
    _Pragma("unroll") for (int j = 0; j < NV; j++) {                                               \
      W_VECTORS(wp + ((q) * OCB + j * 16) * 4)                                                     \
      _Pragma("unroll") for (int p = 0; p < PW; p++) {                                             \
        const uint u = (uint)xq[p];                                                                \
        const s16v x01 = __builtin_astype((i8v)((int)(u & 0xFFu) | (int)(u & 0xFF00u) << 8), s16v); \
        const s16v x23 = __builtin_astype((i8v)((int)((u >> 16) & 0xFFu) | (int)(u >> 24) << 16), s16v); \
        const i8v lo = __builtin_ia32_pmaddwd256(x01, w01a) + __builtin_ia32_pmaddwd256(x23, w23a); \
        const i8v hi = __builtin_ia32_pmaddwd256(x01, w01b) + __builtin_ia32_pmaddwd256(x23, w23b); \
        acc[p][j] += __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); \
      }                                                                                            \
    }                                                                                              \
  }
#elif defined(TEFLON_CLANG_VECTORS)
// Portable: unpack the quad's four weight vectors with shuffles, multiply-add in int32.
#define W_LANE(v, t)                                                                               \
  __builtin_convertvector(__builtin_shufflevector(v, v, t, t + 4, t + 8, t + 12, t + 16, t + 20, t + 24, \
                                                  t + 28, t + 32, t + 36, t + 40, t + 44, t + 48, t + 52, \
                                                  t + 56, t + 60), i16v)
#define QUAD_STEP(xq, q)                                                                           \
  {                                                                                                \
    _Pragma("unroll") for (int j = 0; j < NV; j++) {                                               \
      const c64v wq = *(const __global c64u*)(wp + ((q) * OCB + j * 16) * 4);                      \
      const i16v w0 = W_LANE(wq, 0), w1 = W_LANE(wq, 1), w2 = W_LANE(wq, 2), w3 = W_LANE(wq, 3);     \
      _Pragma("unroll") for (int p = 0; p < PW; p++) {                                             \
        const uint u = (uint)xq[p];                                                                \
        acc[p][j] += (int)(u & 0xFFu) * w0 + (int)((u >> 8) & 0xFFu) * w1 +                        \
                     (int)((u >> 16) & 0xFFu) * w2 + (int)(u >> 24) * w3;                          \
      }                                                                                            \
    }                                                                                              \
  }
#else
// Standard OpenCL C: each output channel's quad as one int (byte t is input channel t), its
// bytes sign-extended by shifts, multiply-add in int32.
#define QUAD_STEP(xq, q)                                                                           \
  {                                                                                                \
    _Pragma("unroll") for (int j = 0; j < NV; j++) {                                               \
      const i16v wq = LOADI16((const __global int*)(wp + ((q) * OCB + j * 16) * 4));               \
      const i16v w0 = (wq << 24) >> 24, w1 = (wq << 16) >> 24, w2 = (wq << 8) >> 24, w3 = wq >> 24; \
      _Pragma("unroll") for (int p = 0; p < PW; p++) {                                             \
        const uint u = (uint)xq[p];                                                                \
        acc[p][j] += (int)(u & 0xFFu) * w0 + (int)((u >> 8) & 0xFFu) * w1 +                        \
                     (int)((u >> 16) & 0xFFu) * w2 + (int)(u >> 24) * w3;                          \
      }                                                                                            \
    }                                                                                              \
  }
#endif
#endif

#ifndef REQ_FLOAT
// add.cc's input rescale MultiplyByQuantizedMultiplier(k << 20, m, -right) for |k| <= 255, m > 0,
// right >= 0, in 32-bit lanes: its SRDHM is floor((k * 2^20 * m + 2^30) / 2^31) =
// floor((k * m + 2^10) / 2^11) = k * (m >> 11) + floor((k * (m & 2047) + 2^10) / 2^11), every
// term below 2^28 in magnitude; then the same RoundingDivideByPOT as q_mbqm16.
inline i16v q_add_rescale16(i16v k, int m, int right) {
  const i16v hi = k * (m >> 11) + ((k * (m & 2047) + 1024) >> 11);
  const int mask = (int)((1u << right) - 1u);
  const i16v threshold = (mask >> 1) - (hi < 0);  // a true lane compares as -1
  return (hi >> right) - ((hi & mask) > threshold);
}
#endif

#if defined(REQ_FLOAT)
#define QCONV_REQ_PARAMS __global const float* restrict scale32,
#else  // fixed point: multiplier, left and right shift; exact: the scale's parts (quant.cl)
#define QCONV_REQ_PARAMS __global const int* restrict req0, __global const int* restrict req1, \
                         __global const int* restrict req2,
#endif
#define QCONV_PARAMS __global const XT* restrict in, __global const WT* restrict w,                   \
                     __global const int* restrict bias, QCONV_REQ_PARAMS                              \
                     __global const XT* restrict zpad, __global XT* restrict out
// the folded ADD's operand and its 11 constants (radd: off1, m1, s1, off2, m2, s2, rm, rshift_add,
// rzo, rlo, rhi), then a folded table's 256 entries (radd[11..266]), and the epilogue's switches
// (epi: 1 resid, 2 exact, 4 table; under REQ_FLOAT only 4). Few arguments: PoCL loads each one per
// work-group, and a small layer runs thousands of them.
#define QCONV_EPI_PARAMS __global const XT* restrict res, __global const int* restrict radd, const int epi
#define QCONV_SIZE_PARAMS const int IH, const int IW, const int IC, const int XS, const int xoff,     \
                          const int OH, const int OW, const int OC, const int YS, const int yoff,     \
                          const int KH, const int KW, const int SH, const int SW, const int DH,       \
                          const int DW, const int PT, const int PL, const int NPIX, const int out_zp, \
                          const int lo, const int hi

// One work-item's tile: PW pixels x OCB channels.
__kernel void qconv(QCONV_PARAMS, QCONV_EPI_PARAMS, QCONV_SIZE_PARAMS) {
  const int ocb = get_global_id(0);
  const int p0 = get_global_id(1) * PW;
  const int last = NPIX - 1;  // work-items past the last pixel recompute it and store nothing
  int ih0[PW], iw0[PW];
  const __global XT* img[PW];
  // the first pixel's (n, oh, ow) by division, the next ones by stepping (sizes are arguments,
  // so divisions are real: a few per work-item, not per pixel)
  const int q0 = p0 < last ? p0 : last;
  int n = q0 / (OH * OW), oh = (q0 / OW) % OH, ow = q0 % OW;
#pragma unroll
  for (int p = 0; p < PW; p++) {
    ih0[p] = oh * SH - PT;
    iw0[p] = ow * SW - PL;
    img[p] = in + n * (IH * IW * XS) + xoff;
    if (p0 + p < last) {  // past the last pixel: stay on it
      ow++;
      if (ow == OW) { ow = 0; oh++; }
      if (oh == OH) { oh = 0; n++; }
    }
  }
  i16v acc[PW][NV];  // seeded with the (folded) bias
#pragma unroll
  for (int j = 0; j < NV; j++) {
    const i16v b = LOADI16(bias + ocb * OCB + j * 16);
#pragma unroll
    for (int p = 0; p < PW; p++) acc[p][j] = b;
  }

#ifdef W8
  const int icq = (IC + 3) >> 2, full = IC >> 2, tail = IC & 3;
  const __global char* wp = (const __global char*)w + ocb * (KH * KW * icq * OCB * 4);
#else
  const __global short* wp = w + ocb * (KH * KW * IC * OCB);
#endif
  for (int kh = 0; kh < KH; kh++) {
    for (int kw = 0; kw < KW; kw++) {
      const __global XT* src[PW];
#pragma unroll
      for (int p = 0; p < PW; p++) {
        const int ih = ih0[p] + kh * DH, iw = iw0[p] + kw * DW;
        src[p] = ((uint)ih < (uint)IH && (uint)iw < (uint)IW) ? img[p] + (ih * IW + iw) * XS : zpad;
      }
#ifdef W8
      for (int q = 0; q < full; q++) {
        int xq[PW];
#pragma unroll
        for (int p = 0; p < PW; p++) xq[p] = LOAD_QUAD(src[p] + 4 * q) ^ FLIP4;
        QUAD_STEP(xq, q)
      }
      if (tail) {  // the last 1-3 input channels, read byte by byte (the weights past IC are 0)
        int xq[PW];
#pragma unroll
        for (int p = 0; p < PW; p++) {
          const __global uchar* s = (const __global uchar*)src[p] + 4 * full;
          uint v = (uint)(s[0] ^ FLIP);
          if (tail > 1) v |= (uint)(s[1] ^ FLIP) << 8;
          if (tail > 2) v |= (uint)(s[2] ^ FLIP) << 16;
          xq[p] = (int)v;
        }
        QUAD_STEP(xq, full)
      }
      wp += icq * OCB * 4;
#else
      for (int ic = 0; ic < IC; ic++) {
        i16v wv[NV];
#pragma unroll
        for (int j = 0; j < NV; j++) wv[j] = LOAD16_INT(short, wp + ic * OCB + j * 16);
#pragma unroll
        for (int p = 0; p < PW; p++) {
          const int x = (int)(uchar)(src[p][ic] ^ FLIP);
#pragma unroll
          for (int j = 0; j < NV; j++) acc[p][j] = x * wv[j] + acc[p][j];
        }
      }
      wp += IC * OCB;
#endif
    }
  }

  // Epilogue: requantization, output zero point, activation clamp, narrowing store.
#pragma unroll
  for (int j = 0; j < NV; j++) {
    const int oc0 = ocb * OCB + j * 16;
    if (oc0 >= OC) break;
#if defined(REQ_FLOAT)
    const f16v fs = LOAD16(scale32 + oc0);
#else
    const i16v r0 = LOADI16(req0 + oc0), r1 = LOADI16(req1 + oc0), r2 = LOADI16(req2 + oc0);
#endif
    // one pixel at a time (a rolled loop: one copy of the requantization and of the folded
    // ADD, not PW; their vectors come from registers through a small private array)
    i16v accs[PW];
#pragma unroll
    for (int p = 0; p < PW; p++) accs[p] = acc[p][j];
#if !defined(REQ_FLOAT)
    if (epi == 0) {  // most convolutions: fixed point alone
#pragma unroll 1
      for (int p = 0; p < PW; p++) {
        if (p0 + p > last) break;
        __global XT* o = out + (p0 + p) * YS + yoff + oc0;
        const i16v v = q_requantize_fixed16(accs[p], r0, r1, r2, out_zp, lo, hi);
        if (oc0 + 16 <= OC) {
          STORE16_BYTES(o, v);
        } else {
          for (int t = 0; t < OC - oc0; t++) o[t] = (XT)v[t];
        }
      }
      continue;
    }
#endif
#pragma unroll 1
    for (int p = 0; p < PW; p++) {
      if (p0 + p > last) break;
      __global XT* o = out + (p0 + p) * YS + yoff + oc0;
#if defined(REQ_FLOAT)
      i16v v = q_requantize_float16(accs[p], fs, out_zp, lo, hi);
#else
      i16v v;
      if (epi & 2) {
        v = q_requantize_exact16(accs[p], r0, r1, r2, out_zp, lo, hi);
      } else {
        v = q_requantize_fixed16(accs[p], r0, r1, r2, out_zp, lo, hi);
      }
      if (epi & 1) {  // the folded ADD on the conv's int8 outputs: add.cc's arithmetic, vectorised
        const __global XT* rp = res + (p0 + p) * YS + yoff + oc0;
        i16v other = 0;
        if (oc0 + 16 <= OC) {
          other = LOAD16_INT(XT, rp);
        } else {
          for (int t = 0; t < OC - oc0; t++) other[t] = rp[t];
        }
        const i16v sum = q_add_rescale16(v + radd[0], radd[1], radd[2]) +
                         q_add_rescale16(other + radd[3], radd[4], radd[5]);
        const int rshift_add = radd[7];
        v = q_mbqm16(sum, (i16v)(radd[6]), (i16v)(rshift_add > 0 ? rshift_add : 0),
                     (i16v)(rshift_add > 0 ? 0 : -rshift_add)) + radd[8];
        v = v < radd[9] ? (i16v)(radd[9]) : v;
        v = v > radd[10] ? (i16v)(radd[10]) : v;
      }
#endif
      if (oc0 + 16 <= OC) {
        STORE16_BYTES(o, v);
      } else {
        for (int t = 0; t < OC - oc0; t++) o[t] = (XT)v[t];
      }
      if (epi & 4) q_table_bytes((__global uchar*)o, OC - oc0 < 16 ? OC - oc0 : 16, radd + 11, FLIP);
    }
  }
}

// Which inner loop this program compiled (QCONV_VARIANTS in qspecs.py; the partition's stats
// report it): 0 int16 weights, 1 the portable quad shuffles, 2 AVX-512 VNNI's vpdpbusd, 3 the
// standard OpenCL C quads (shifts), 4 AVX2's vpmaddwd pairs.
__kernel void qconv_variant(__global int* variant) {
#if !defined(W8)
  variant[0] = 0;
#elif defined(QCONV_VNNI)
  variant[0] = 2;
#elif defined(QCONV_MADD)
  variant[0] = 4;
#elif defined(TEFLON_CLANG_VECTORS)
  variant[0] = 1;
#else
  variant[0] = 3;
#endif
}
