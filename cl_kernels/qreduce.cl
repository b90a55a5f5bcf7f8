// int8 / uint8 window and row reductions: AVERAGE_POOL_2D, MAX_POOL_2D, MEAN, SOFTMAX. Every size
// and constant is an ARGUMENT (one program for every shape and both types); needs quant.cl first.
// Included as a template with no macros (once per program, beside a partition's other integer
// template kernels), except under REQ_FLOAT (qmean's float32 rule), a program of its own.
// Bytes are read as values through `flip` (0x80 for int8, 0 for uint8): value = (byte ^ flip) - flip.

// The 16 channel values at `p` (the first `n` when fewer are left; the rest 0).
inline i16v load_values(const __global uchar* p, int n, int flip) {
  i16v v = 0;
  if (n >= 16) {
    v = LOAD16_INT(uchar, p);
  } else {
    for (int l = 0; l < n; l++) v[l] = p[l];
  }
  return (v ^ flip) - flip;
}

inline void store_values(__global uchar* p, i16v v, int n) {
  if (n >= 16) {
    STORE16_BYTES(p, v);
  } else {
    for (int l = 0; l < n; l++) p[l] = (uchar)v[l];
  }
}

// Pools: one output pixel x 16 channels per work-item; the window is clipped to the input (cells
// of TFLite's padding take no part). Global (ceil(C/16), OW, NB*OH), local 1x1x1.
#define QPOOL_ARGS                                                                                 \
  __global const uchar* restrict in, __global uchar* restrict out, const int C, const int IH,     \
      const int IW, const int OH, const int OW, const int FH, const int FW, const int SH,          \
      const int SW, const int PT, const int PL, const int flip, const int lo, const int hi

#define QPOOL_WINDOW                                                                               \
  const int c0 = get_global_id(0) * 16, ow = get_global_id(1), row = get_global_id(2);            \
  const int n = row / OH, oh = row % OH, nc = C - c0;                                              \
  const int h0 = oh * SH - PT, w0 = ow * SW - PL;                                                  \
  const int hs = h0 > 0 ? h0 : 0, he = h0 + FH < IH ? h0 + FH : IH;                                \
  const int ws = w0 > 0 ? w0 : 0, we = w0 + FW < IW ? w0 + FW : IW;                                \
  const __global uchar* img = in + n * (IH * IW * C) + c0;

// TFLite's quantized average: (sum +- count / 2) / count with C's truncating division.
__kernel void qavg_pool(QPOOL_ARGS) {
  QPOOL_WINDOW
  i16v sum = 0;
  for (int h = hs; h < he; h++)
    for (int w = ws; w < we; w++) sum += load_values(img + (h * IW + w) * C, nc, flip);
  const int count = (he - hs) * (we - ws);
  i16v v = (sum + (sum > 0 ? (i16v)(count / 2) : (i16v)(-(count / 2)))) / count;
  v = v < lo ? (i16v)(lo) : v;
  v = v > hi ? (i16v)(hi) : v;
  store_values(out + (row * OW + ow) * C + c0, v, nc);
}

__kernel void qmax_pool(QPOOL_ARGS) {
  QPOOL_WINDOW
  i16v m = (i16v)(-2147483647 - 1);
  for (int h = hs; h < he; h++)
    for (int w = ws; w < we; w++) {
      const i16v x = load_values(img + (h * IW + w) * C, nc, flip);
      m = x > m ? x : m;
    }
  m = m < lo ? (i16v)(lo) : m;
  m = m > hi ? (i16v)(hi) : m;
  store_values(out + (row * OW + ow) * C + c0, m, nc);
}

// MEAN (TFLite's QuantizedMeanOrSum): the input seen as kept dims (k0..k3, strides ks0..ks3) x
// reduced dims (r0..r3, strides rs0..rs3). Each output's values are summed in int32 (wrapping),
// count * input zero point taken off, requantized by (m, shift) (1/count folded in on the host),
// plus the output zero point, saturated. `opi` outputs per work-item; global (ceil(n_out / opi)).
__kernel void qmean(__global const uchar* restrict in, __global uchar* restrict out, const int n_out,
                    const int opi, const int k1, const int k2, const int k3, const int ks0,
                    const int ks1, const int ks2, const int ks3, const int r0, const int r1,
                    const int r2, const int r3, const int rs0, const int rs1, const int rs2,
                    const int rs3, const int count, const int in_zp, const int m, const int shift,
                    const int out_zp, const int qmin, const int qmax, const int flip
#ifdef REQ_FLOAT
                    , const float scale32
#endif
                    ) {
  const int o0 = get_global_id(0) * opi;
  const int o1 = o0 + opi < n_out ? o0 + opi : n_out;
  for (int o = o0; o < o1; o++) {
    int q = o;
    const int j3 = q % k3; q /= k3;
    const int j2 = q % k2; q /= k2;
    const int j1 = q % k1; const int j0 = q / k1;
    const __global uchar* p = in + j0 * ks0 + j1 * ks1 + j2 * ks2 + j3 * ks3;
    uint sum = 0;
    for (int a = 0; a < r0; a++)
      for (int b = 0; b < r1; b++)
        for (int c = 0; c < r2; c++)
          for (int d = 0; d < r3; d++) sum += (uint)((int)(p[a * rs0 + b * rs1 + c * rs2 + d * rs3] ^ flip) - flip);
    const int shifted = (int)(sum - (uint)in_zp * (uint)count);
#ifdef REQ_FLOAT
    const int v = q_requantize_float16((i16v)(shifted), (f16v)(scale32), out_zp, qmin, qmax)[0];
#else
    int v = q_mbqm(shifted, m, shift) + out_zp;
    v = v < qmin ? qmin : (v > qmax ? qmax : v);
#endif
    out[o] = (uchar)v;
  }
}

// MEAN over consecutive axes with 16+ values after them ([outer][n][inner] -> [outer][inner]: an
// SE block's squeeze, a global average pool over H and W): 16 outputs at a time from 16-byte loads
// of each of the n positions (qmean walks one output's positions, `inner` bytes apart, a byte at a
// time), the last block of a row shifted back to end at `inner` (its overlap summed and stored
// twice, equal); `bpi` blocks per work-item. qmean's wrapping int32 sums and requantization, 16
// lanes at once (q_mbqm16 equals q_mbqm for the positive multiplier). Global
// (outer * ceil(blocks / bpi)), local 1.
__kernel void qmean_mid(__global const uchar* restrict in, __global uchar* restrict out, const int n,
                        const int inner, const int bpi, const int count, const int in_zp, const int m,
                        const int shift, const int out_zp, const int qmin, const int qmax, const int flip
#ifdef REQ_FLOAT
                        , const float scale32
#endif
                        ) {
  const int blocks = (inner + 15) / 16, per = (blocks + bpi - 1) / bpi;
  const int g = get_global_id(0), oi = g / per, b0 = (g % per) * bpi;
  const int b1 = b0 + bpi < blocks ? b0 + bpi : blocks;
  for (int b = b0; b < b1; b++) {
    const int c = b * 16 > inner - 16 ? inner - 16 : b * 16;
    const __global uchar* p = in + oi * (n * inner) + c;
    u16v sum = (u16v)(0u);
    for (int i = 0; i < n; i++) sum += AS_U16((LOAD16_INT(uchar, p + i * inner) ^ flip) - flip);
    const i16v shifted = AS_I16(sum - (u16v)((uint)in_zp * (uint)count));
#ifdef REQ_FLOAT
    const i16v v = q_requantize_float16(shifted, (f16v)(scale32), out_zp, qmin, qmax);
#else
    const int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
    const i16v v = q_requantize_fixed16(shifted, (i16v)(m), (i16v)(left), (i16v)(right), out_zp, qmin, qmax);
#endif
    STORE16_BYTES(out + oi * inner + c, v);
  }
}

// SOFTMAX of each row (TFLite's 8-bit reference kernel, gemmlowp fixed point): d = max - x indexes
// the host's tables of Q0 exp(-d * beta * scale) and of its Q12 term (0 where -d < diff_min);
// the terms' int32 sum is inverted with GetReciprocal and each exp scaled by it down to 8 bits.
// One row per work-item; global (rows), local 1.
__kernel void qsoftmax(__global const uchar* restrict in, __global uchar* restrict out,
                       __global const int* restrict exps, __global const int* restrict terms,
                       const int depth, const int flip, const int diff_min, const int qmin,
                       const int qmax) {
  const __global uchar* x = in + get_global_id(0) * depth;
  __global uchar* y = out + get_global_id(0) * depth;
  int mx = -256;
  for (int i = 0; i < depth; i++) {
    const int v = (int)(x[i] ^ flip);
    mx = v > mx ? v : mx;
  }
  uint sum = 0;
  for (int i = 0; i < depth; i++) sum += (uint)terms[mx - (int)(x[i] ^ flip)];
  int bits;
  const int scale = q_get_reciprocal((int)sum, 12, &bits);
  int exponent = bits + 31 - 8;
  exponent = exponent > 31 ? 31 : exponent;  // LiteRT aborts beyond (a row sum of 512 or more)
  for (int i = 0; i < depth; i++) {
    const int d = mx - (int)(x[i] ^ flip);
    int v = qmin;
    if (-d >= diff_min) {
      v = q_rdbpot(q_srdhm(scale, exps[d]), exponent) + qmin;
      v = v < qmin ? qmin : (v > qmax ? qmax : v);
    }
    y[i] = (uchar)v;
  }
}
