// GPU-style GEMM and convolution (kernel family "gpu", kernels/gpu_specs.py), for devices that
// run a work-group's work-items across SIMD lanes (GPUs, llvmpipe). Standard OpenCL C only.
//
// A TEMPLATE: instantiated once per tile (TM rows x TN float4 column groups), as the GEMM
// GPU_GEMM_NAME or the convolution GPU_CONV_NAME (whichever the instantiation defines); the
// helpers and gpu_pack_b are defined once, by the first instantiation of a program.
//
// GEMM: C[M][N] = act(A[M][K] . B + bias) [+ R, clamped again], for FULLY_CONNECTED,
// BATCH_MATMUL and 1x1 convolutions.
// Each work-item computes one TM x 4*TN tile of C in TM * TN float4 registers: work-item
// (q, r, b) of the global grid takes columns q*4*TN.. and rows r*TM.. of batch b. Adjacent
// work-items along dim 0 read adjacent float4s of each B row and write adjacent columns of C
// (coalesced); the work-items of one dim-0 row share their A elements. No local memory and no
// barriers, so a work-item past the matrix simply returns (the global size is a multiple of
// the work-group size). Every size is an argument.
//
// B is [K][ldb] row-major (columns past N, up to ldb, are zero: ldb is N rounded up to 4*TN),
// bias has ldb floats (zero past N). A element (m, k) is at m * lda + k * ask. Rows past M
// read row M-1 and are not stored; columns past N are not stored. Epilogue as gemm.cl's:
// v = clamp(acc + bias, lo, hi); with `res`, v = clamp(v + R[m][n], rlo, rhi) (R like C, rows
// ldc apart). Batched: dim 2 runs over bd0 * bd1 * bd2 batches; batch (b0, b1, b2) reads A at
// b0 * as0 + b1 * as1 + b2 * as2 and B at b0 * bs0 + ..; C (and R) at b * M * ldc.
// Clamps are compares, not fmin/fmax, so NaN passes through as in the CPU kernels.
//
// The tile is written out with macros (GPU_ROWS), not loops over private arrays: llvmpipe keeps
// such arrays in scratch memory (2-3x slower measured), named variables stay in registers.
// One reduction loop and one epilogue, nothing unrolled by hand beyond the tile: on rusticl a
// launch costs more the larger the kernel (~0.25 ms for a trivial kernel, ~1.2 ms for a 4x8
// tile with a 4-step loop and a separate whole-tile store path), and the leaner kernel measured
// 10-30% faster per layer on llvmpipe as well.
#ifndef GPU_CLAMP4
#define GPU_CLAMP4
inline float4 gpu_clamp4(float4 v, float lo, float hi) {
  v = v < (float4)(lo) ? (float4)(lo) : v;
  return v > (float4)(hi) ? (float4)(hi) : v;
}

// Store the first n (1..4, or more: all 4) lanes of v at p.
inline void gpu_store4(__global float* p, float4 v, int n) {
  if (n >= 4) {
    vstore4(v, 0, p);
  } else {
    p[0] = v.x;
    if (n > 1) p[1] = v.y;
    if (n > 2) p[2] = v.z;
  }
}

// The first n lanes at p (all 4 when n >= 4), the rest 0.
inline float4 gpu_load4(const __global float* p, int n) {
  if (n >= 4) return vload4(0, p);
  return (float4)(p[0], n > 1 ? p[1] : 0.0f, n > 2 ? p[2] : 0.0f, 0.0f);
}

// The epilogue of one float4 of outputs at p (residual at r), `left` of them inside the tensor.
inline void gpu_out4(__global float* p, const __global float* r, float4 v, int left, float lo, float hi,
                     int res, float rlo, float rhi) {
  if (left <= 0) return;
  v = gpu_clamp4(v, lo, hi);
  if (res) v = gpu_clamp4(v + gpu_load4(r, left), rlo, rhi);
  gpu_store4(p, v, left);
}

// A runtime B (BATCH_MATMUL) into the GEMM's layout: batch b's [K][ldb] rows from element
// (k, n) at k * psk + n * psn of its [K][N] (or [N][K]) matrix, zero past N.
// Global (ldb, K, batches).
__kernel void gpu_pack_b(__global const float* restrict src, __global float* restrict dst, const int K,
                         const int N, const int ldb, const int psk, const int psn) {
  const int n = get_global_id(0), k = get_global_id(1), b = get_global_id(2);
  if (n >= ldb || k >= K) return;
  dst[(b * K + k) * ldb + n] = n < N ? src[b * (K * N) + k * psk + n * psn] : 0.0f;
}
#endif

// TM rows (pixels) of a tile, and TN (= 1) float4 accumulator per row: c<row><group>.
#if TM == 1
#define GPU_ROWS(X) X(0)
#elif TM == 2
#define GPU_ROWS(X) X(0) X(1)
#elif TM == 4
#define GPU_ROWS(X) X(0) X(1) X(2) X(3)
#else
#error "gpu_gemm.cl: TM must be 1, 2 or 4"
#endif
#if TN == 1
#define GPU_INIT(i) float4 c##i##0 = bb0;
#define GPU_FMA(i, av, r) c##i##0 = (av) * r##0 + c##i##0;
#define GPU_OUT(i, p, r, left)                                          \
  gpu_out4((p), (r), c##i##0, (left), lo, hi, res, rlo, rhi);
#define GPU_LOAD_B(r, q) const float4 r##0 = vload4(0, q);
#define GPU_LOAD_BIAS(q) const float4 bb0 = vload4(0, q);
#else
#error "gpu_gemm.cl: TN must be 1 (two float4s per row measured slower on llvmpipe)"
#endif

#ifdef GPU_GEMM_NAME
#define GPU_A_ROW(i) const __global float* a##i = A0 + (m0 + i < M ? m0 + i : M - 1) * lda;
#define GPU_A_FMA(i) { const float av = a##i[k * ask]; GPU_FMA(i, av, b) }
#define GPU_C_OUT(i) if (m0 + i < M) { GPU_OUT(i, C + o + i * ldc, R + o + i * ldc, N - n0) }
__kernel void GPU_GEMM_NAME(__global const float* restrict A, __global const float* restrict B,
                            __global const float* restrict bias, __global float* restrict C,
                            __global const float* restrict R, const int M, const int N, const int K,
                            const int lda, const int ask, const int ldb, const int ldc, const float lo,
                            const float hi, const int res, const float rlo, const float rhi,
                            const int bd1, const int bd2, const int as0, const int as1, const int as2,
                            const int bs0, const int bs1, const int bs2) {
  const int n0 = get_global_id(0) * (4 * TN);
  const int m0 = get_global_id(1) * TM;
  const int bt = get_global_id(2);
  if (n0 >= N || m0 >= M) return;
  const __global float* A0 = A;
  const __global float* bp = B + n0;
  if (bt) {
    const int b0 = bt / (bd1 * bd2), b1 = (bt / bd2) % bd1, b2 = bt % bd2;
    A0 += b0 * as0 + b1 * as1 + b2 * as2;
    bp += b0 * bs0 + b1 * bs1 + b2 * bs2;
  }
  GPU_ROWS(GPU_A_ROW)
  GPU_LOAD_BIAS(bias + n0)
  GPU_ROWS(GPU_INIT)
  for (int k = 0; k < K; k++, bp += ldb) {
    GPU_LOAD_B(b, bp)
    GPU_ROWS(GPU_A_FMA)
  }
  const int o = bt * (M * ldc) + m0 * ldc + n0;
  GPU_ROWS(GPU_C_OUT)
}
#undef GPU_A_ROW
#undef GPU_A_FMA
#undef GPU_C_OUT
#endif

// Convolution: NHWC CONV_2D as an implicit GEMM, output pixels (flattened over batch, rows and
// columns) x output channels [+ a residual ADD, as above]. Work-item (q, r) computes TM
// consecutive pixels r*TM.. x channels q*4*TN..; weights arrive packed as [KH][KW][IC][ldw]
// (ldw = OC rounded up to 4*TN, zero past OC), so the work-items of one dim-0 row read adjacent
// float4s of one weight row and share their input elements. Per filter row, when every pixel's
// window row lies inside the image (and DW == 1), its KW * IC inputs are contiguous in NHWC, as
// are the weights: one reduction of KW * IC steps (27 for a 3x3 RGB stem instead of 9 of 3).
// Otherwise, per tap, a tap in the padding reads from `zeros` (>= IC floats of 0), chosen per
// pixel outside the channel loop.
#ifdef GPU_CONV_NAME
#define GPU_PIXEL(i)                                                    \
  const int q##i = p0 + i < npix ? p0 + i : npix - 1;                   \
  const int r##i = q##i % (OH * OW);                                    \
  const int y##i = (r##i / OW) * SH - PT, x##i = (r##i % OW) * SW - PL; \
  const __global float* img##i = in + (q##i / (OH * OW)) * (IH * IW * IC);
#define GPU_TAP(i)                                                      \
  const int ty##i = y##i + ky * DH, tx##i = x##i + kx * DW;             \
  const __global float* s##i =                                          \
      ty##i >= 0 && ty##i < IH && tx##i >= 0 && tx##i < IW ? img##i + (ty##i * IW + tx##i) * IC : zeros;
#define GPU_ROW_IN(i)                                                   \
  const int ry##i = y##i + ky * DH;                                     \
  const int in##i = ry##i >= 0 && ry##i < IH && x##i >= 0 && x##i + KW <= IW;
#define GPU_AND_IN(i) in##i &&
#define GPU_ROW_PTR(i) const __global float* s##i = img##i + (ry##i * IW + x##i) * IC;
// The reduction over n contiguous steps from s<row> (inputs) and wp (weight rows ldw apart).
#define GPU_REDUCE(n)                                                   \
  for (int c = 0; c < (n); c++, wp += ldw) {                            \
    GPU_LOAD_B(b, wp)                                                   \
    GPU_ROWS(GPU_S_FMA)                                                 \
  }
#define GPU_S_FMA(i) { const float av = s##i[c]; GPU_FMA(i, av, b) }
#define GPU_P_OUT(i) if (p0 + i < npix) { GPU_OUT(i, out + (p0 + i) * OC + c0, R + (p0 + i) * OC + c0, OC - c0) }
__kernel void GPU_CONV_NAME(__global const float* restrict in, __global const float* restrict w,
                            __global const float* restrict bias, __global const float* restrict zeros,
                            __global float* restrict out, __global const float* restrict R,
                            const int NB, const int IH, const int IW, const int IC, const int OH,
                            const int OW, const int OC, const int KH, const int KW, const int SH,
                            const int SW, const int DH, const int DW, const int PT, const int PL,
                            const float lo, const float hi, const int res, const float rlo,
                            const float rhi, const int ldw) {
  const int c0 = get_global_id(0) * (4 * TN);
  const int p0 = get_global_id(1) * TM;
  const int npix = NB * OH * OW;
  if (c0 >= OC || p0 >= npix) return;
  GPU_ROWS(GPU_PIXEL)
  GPU_LOAD_BIAS(bias + c0)
  GPU_ROWS(GPU_INIT)
  const __global float* wp = w + c0;
  for (int ky = 0; ky < KH; ky++) {
    GPU_ROWS(GPU_ROW_IN)
    if (DW == 1 && GPU_ROWS(GPU_AND_IN) 1) {  // the whole window row inside, for every pixel
      GPU_ROWS(GPU_ROW_PTR)
      GPU_REDUCE(KW * IC)
    } else {
      for (int kx = 0; kx < KW; kx++) {
        GPU_ROWS(GPU_TAP)
        GPU_REDUCE(IC)
      }
    }
  }
  GPU_ROWS(GPU_P_OUT)
}
#undef GPU_PIXEL
#undef GPU_TAP
#undef GPU_S_FMA
#undef GPU_ROW_IN
#undef GPU_AND_IN
#undef GPU_ROW_PTR
#undef GPU_REDUCE
#undef GPU_P_OUT
#endif
#undef GPU_ROWS
#undef GPU_INIT
#undef GPU_FMA
#undef GPU_OUT
#undef GPU_LOAD_B
#undef GPU_LOAD_BIAS
