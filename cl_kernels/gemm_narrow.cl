// C[M][NN] = act(A[M][K] . B + bias) [+ R, clamped again] for NN = 1, 2, 4 or 8 columns: 1x1
// convolutions and FULLY_CONNECTED layers with a handful of output channels (MediaPipe's landmark
// models run 8 -> 8 channel 1x1 convolutions at 256x256), where gemm.cl's 16-column panels would
// be mostly padding and its edge path stores row by row.
//
// A TEMPLATE, instantiated per NN under the kernel name GEMM_NARROW_NAME. C is read as flat
// 16-float vectors: vector v holds rows v * RV .. v * RV + RV - 1 (RV = 16 / NN), lane l being
// row v * RV + l / NN, column l % NN. B arrives as a [K][16] pattern (lane l: B[k][l % NN]) and
// the bias as a 16-lane pattern, so each k step is RV scalar loads of A, spread over the lanes,
// times one B vector. Rows past M repeat row M - 1 and are not stored. Each work-item computes
// GV vectors at a time over `vpi` consecutive vectors. Epilogue as gemm.cl's (residual R shaped
// like C; a folded PRELU's slopes `alpha` as a 16-lane pattern like the bias). Global
// (ceil(vectors / vpi)), local 1.
#define RV (16 / NN)
#define GV 4

__kernel void GEMM_NARROW_NAME(__global const float* restrict A, __global const float* restrict B,
                               __global const float* restrict bias, __global float* restrict C,
                               __global const float* restrict R, __global const float* restrict alpha,
                               const int M, const int K, const int lda, const float lo, const float hi,
                               const int res, const float rlo, const float rhi, const int vpi,
                               const int post) {
  const int flat = M * NN, vectors = (flat + 15) / 16;
  const int v0 = get_global_id(0) * vpi;
  const int v1 = v0 + vpi < vectors ? v0 + vpi : vectors;
  const f16u bv = LOAD16(bias);
  for (int v = v0; v < v1; v += GV) {
    const __global float* a[GV][RV];
#pragma unroll
    for (int g = 0; g < GV; g++) {
#pragma unroll
      for (int r = 0; r < RV; r++) {
        const int m = (v + g) * RV + r;
        a[g][r] = A + (m < M ? m : M - 1) * lda;
      }
    }
    f16u acc[GV];
#pragma unroll
    for (int g = 0; g < GV; g++) acc[g] = bv;
    for (int k = 0; k < K; k++) {
      const f16u b = LOAD16(B + k * 16);
#pragma unroll
      for (int g = 0; g < GV; g++) {
        f16u x;
#pragma unroll
        for (int l = 0; l < 16; l++) x[l] = a[g][l / NN][k];
        acc[g] = x * b + acc[g];
      }
    }
    f16u t[GV];
#pragma unroll
    for (int g = 0; g < GV; g++) t[g] = acc[g];
#pragma unroll 1
    for (int g = 0; g < GV && v + g < v1; g++) {
      const int f = (v + g) * 16;
      f16u y = clamp16(t[g], lo, hi);
      if (res) y = clamp16(y + load_upto(R + f, flat - f), rlo, rhi);
      if (post) y = post16(y, alpha, post);
      store_upto(C + f, y, flat - f);
    }
  }
}
#undef GV
#undef RV
