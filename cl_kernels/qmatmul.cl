// int8 BATCH_MATMUL as LiteRT's reference kernel computes it: per output element the int32 sum
// over k of (x[m][k] - x_zp) * (y[k][n] - y_zp), then MultiplyByQuantizedMultiplier by the one
// per-tensor multiplier, + the output zero point, clamped to [lo, hi]. Needs quant.cl before it.
//
// The right operand arrives packed as int16 panels [BB][K][NP] holding y - y_zp (columns past N
// hold 0), so the MAC loop reads whole 16-column vectors whatever adj_y was: qmatmul_pack_b
// writes them on the device for a runtime operand, the host for a constant one. The left
// operand is read in place: element (m, k) of a batch at m * LDA + k * ASK (adj_x swaps them),
// its zero point subtracted per load.
//
// qmatmul: each work-item computes PM rows x OCB = 16 * NV columns of one batch in PM * NV
// int32x16 registers. Products of two values within [-255, 255] and their int32 sums are exact
// (the sum wraps as LiteRT's int32 accumulator does only past ~33000 terms of extreme values).
// Batches: z = (i0 * D1 + i1) * D2 + i2 over the output's (up to 3) batch dimensions; each
// operand's batch offset is sum(i * stride) (stride 0 where it broadcasts).
// Macros: XT (char) NV PM. Global (NP/OCB, ceil(M/PM), D0*D1*D2), local 1x1x1.
#define OCB (16 * NV)

__kernel void qmatmul(__global const XT* restrict a, __global const short* restrict b,
                      __global XT* restrict out, const int M, const int N, const int K, const int NP,
                      const int LDA, const int ASK, const int D1, const int D2, const int AS0,
                      const int AS1, const int AS2, const int BS0, const int BS1, const int BS2,
                      const int x_zp, const int mult, const int lshift, const int rshift,
                      const int out_zp, const int lo, const int hi) {
  const int nb = get_global_id(0);
  const int m0 = get_global_id(1) * PM;
  const int z = get_global_id(2);
  const int i2 = z % D2, i1 = (z / D2) % D1, i0 = z / (D1 * D2);
  const __global XT* ab = a + i0 * AS0 + i1 * AS1 + i2 * AS2;
  const __global short* bp = b + i0 * BS0 + i1 * BS1 + i2 * BS2 + nb * OCB;
  const __global XT* row[PM];
#pragma unroll
  for (int p = 0; p < PM; p++) {
    const int m = m0 + p < M ? m0 + p : M - 1;  // rows past M recompute the last and store nothing
    row[p] = ab + m * LDA;
  }
  i16v acc[PM][NV];
#pragma unroll
  for (int p = 0; p < PM; p++) {
#pragma unroll
    for (int j = 0; j < NV; j++) acc[p][j] = (i16v)(0);
  }
  for (int k = 0; k < K; k++) {
    i16v yv[NV];
#pragma unroll
    for (int j = 0; j < NV; j++) yv[j] = LOAD16_INT(short, bp + k * NP + j * 16);
#pragma unroll
    for (int p = 0; p < PM; p++) {
      const int x = (int)row[p][k * ASK] - x_zp;
#pragma unroll
      for (int j = 0; j < NV; j++) acc[p][j] = x * yv[j] + acc[p][j];
    }
  }
  const i16v m = (i16v)(mult), l = (i16v)(lshift), r = (i16v)(rshift);
#pragma unroll
  for (int p = 0; p < PM; p++) {
    if (m0 + p >= M) break;
    __global XT* o = out + ((long)z * M + m0 + p) * N;
#pragma unroll
    for (int j = 0; j < NV; j++) {
      const int n0 = nb * OCB + j * 16;
      if (n0 >= N) break;
      const i16v v = q_requantize_fixed16(acc[p][j], m, l, r, out_zp, lo, hi);
      if (n0 + 16 <= N) {
        STORE16_BYTES(o + n0, v);
      } else {
        for (int t = 0; t < N - n0; t++) o[n0 + t] = (XT)v[t];
      }
    }
  }
}

// The right operand's panels: y[bb][k][n] - y_zp as int16 at [bb][k][n] of [BB][K][NP], 0 past N.
// Element (k, n) of raw matrix bb sits at bb * K * N + k * SK + n * SN (SK = N, SN = 1; adj_y:
// SK = 1, SN = K). A work-item writes one panel row (a work-item per element cost more than the
// matmul itself on PoCL). Global (K, BB), local 1x1.
__kernel void qmatmul_pack_b(__global const XT* restrict y, __global short* restrict panels,
                             const int N, const int K, const int NP, const int SK, const int SN,
                             const int y_zp) {
  const int k = get_global_id(0), bb = get_global_id(1);
  const __global XT* src = y + bb * K * N + k * SK;
  __global short* dst = panels + (bb * K + k) * NP;
  for (int n = 0; n < N; n++) dst[n] = (short)((int)src[n * SN] - y_zp);
  for (int n = N; n < NP; n++) dst[n] = 0;
}
