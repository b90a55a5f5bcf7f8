// C[M][N] = act(A[M][K] . B[K][N] + bias): FULLY_CONNECTED, BATCH_MATMUL, 1x1 convolutions.
// B arrives packed on the host as panels [NP/NR][K][NR] (NR = 16 * NV, zero-padded to NP), so a
// work-item streams one contiguous panel. Each work-item computes an MR x NR tile held in
// MR * NV float16 registers. Rows past M reuse row M-1 for loading and are not stored; columns
// past N are computed from zero padding and not stored.
// Macros: M N K NP MR NV LDA LDC [ACT_MIN] [ACT_MAX]; global size (NP/NR, ceil(M/MR)), local 1x1.
#define NR (16 * NV)

__kernel void gemm(__global const float* restrict A, __global const float* restrict B,
                   __global const float* restrict bias, __global float* restrict C) {
  const int nb = get_global_id(0);
  const int m0 = get_global_id(1) * MR;
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
      const float av = a[i][k];
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
