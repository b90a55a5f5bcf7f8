// C[M][N] = act(A[M][K] . B + bias): FULLY_CONNECTED, BATCH_MATMUL, 1x1 convolutions.
// B arrives packed as panels [NP/NR][K][NR] (NR = 16 * NV, zero-padded to NP), on the host for
// constant weights or by gemm_pack_b below, so a work-item streams one contiguous panel. Each
// work-item computes an MR x NR tile held in MR * NV float16 registers. Rows past M reuse row M-1
// for loading and are not stored; columns past N are computed from zero padding and not stored.
// Macros: M N K NP MR NV LDA LDC [ACT_MIN] [ACT_MAX]; global size (NP/NR, ceil(M/MR)), local 1x1.
// A element (m, k) is at m * LDA + k * ASK (ASK defaults to 1; BATCH_MATMUL's adj_x sets LDA 1).
// Batched (BATCH_MATMUL): global dim 2 runs over BATCH = BD0 * BD1 * BD2 batches; batch
// (b0, b1, b2) reads A at b0 * ABS0 + b1 * ABS1 + b2 * ABS2 and packed B at BBS0.., (stride 0:
// broadcast) and writes C at b * M * LDC.
#define NR (16 * NV)
#ifndef ASK
#define ASK 1
#endif
#ifndef BD1
#define BD1 1
#endif
#ifndef BD2
#define BD2 1
#endif
#ifndef ABS0
#define ABS0 0
#define ABS1 0
#define ABS2 0
#define BBS0 0
#define BBS1 0
#define BBS2 0
#endif

__kernel void gemm(__global const float* restrict A, __global const float* restrict B,
                   __global const float* restrict bias, __global float* restrict C) {
  const int nb = get_global_id(0);
  const int m0 = get_global_id(1) * MR;
  const int bt = get_global_id(2);
  const int b0 = bt / (BD1 * BD2), b1 = (bt / BD2) % BD1, b2 = bt % BD2;
  A += b0 * ABS0 + b1 * ABS1 + b2 * ABS2;
  B += b0 * BBS0 + b1 * BBS1 + b2 * BBS2;
  C += bt * (M * LDC);
  const __global float* a[MR];
#pragma unroll
  for (int i = 0; i < MR; i++) a[i] = A + (m0 + i < M ? m0 + i : M - 1) * LDA;
  const __global float* b = B + nb * (K * NR);

  f16u acc[MR][NV];
#pragma unroll
  for (int j = 0; j < NV; j++) {
    const f16u bv = LOAD16(bias + nb * NR + j * 16);
#pragma unroll
    for (int i = 0; i < MR; i++) acc[i][j] = bv;
  }
  for (int k = 0; k < K; k++) {
    f16u bv[NV];
#pragma unroll
    for (int j = 0; j < NV; j++) bv[j] = LOAD16(b + k * NR + j * 16);
#pragma unroll
    for (int i = 0; i < MR; i++) {
      const float av = a[i][k * ASK];
#pragma unroll
      for (int j = 0; j < NV; j++) acc[i][j] = av * bv[j] + acc[i][j];
    }
  }
#pragma unroll
  for (int i = 0; i < MR; i++) {
    if (m0 + i < M) {
      __global float* c = C + (m0 + i) * LDC + nb * NR;
#pragma unroll
      for (int j = 0; j < NV; j++) {
        const int col = nb * NR + j * 16;
        if (col + 16 <= N) STORE16(c + j * 16, act16(acc[i][j]));
        else if (col < N) store_tail(c + j * 16, act16(acc[i][j]), N - col);
      }
    }
  }
}

#ifdef PSK
// Pack a runtime B into gemm's panels: raw batch `bb` element (k, n) at bb * K * N + k * PSK +
// n * PSN (BATCH_MATMUL's adj_y swaps the strides) -> P[bb][NP/NR][K][NR], zero-padded past N.
// Global (NP/NR, K, batches of B), local 1x1x1.
__kernel void gemm_pack_b(__global const float* restrict S, __global float* restrict P) {
  const int nb = get_global_id(0), k = get_global_id(1), bb = get_global_id(2);
  const __global float* s = S + bb * (K * N) + k * PSK;
  __global float* p = P + bb * (NP * K) + (nb * K + k) * NR;
  for (int l = 0; l < NR; l++) {
    const int n = nb * NR + l;
    p[l] = n < N ? s[n * PSN] : 0.0f;
  }
}
#endif
