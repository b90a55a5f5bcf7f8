// C[M][N] = act(A[M][K] . B + bias) [+ R, clamped again]: FULLY_CONNECTED, BATCH_MATMUL and
// 1x1 convolutions (a residual ADD after one folds into the epilogue).
//
// A TEMPLATE: the host instantiates this file once per register blocking (MR, NV) inside one
// program, each under its own kernel name GEMM_NAME (programs.py, kernels.BLOCKINGS), so one
// build serves every blocking; every size is an argument, so every shape shares it.
//
// B arrives packed as panels [P][K][NR] (NR = 16 * NV, P = ceil(N / NR)), on the host for
// constant weights or by gemm_pack_b below, so a work-item streams one contiguous panel. With
// N >= NR the last panel is shifted back to end at column N and the last row block back to end
// at row M (packing.panel_starts): every tile is whole, overlaps are computed twice and stored
// twice with equal values, and the epilogue has no tails. Only N < NR (one zero-padded panel) or
// M < MR (rows past M reuse row M-1 and are not stored) take the rolled edge path.
// Each work-item computes an MR x NR tile held in MR * NV float16 registers.
// A element (m, k) is at m * lda + k, or m * lda + k * ask in the STRIDED_A instantiation
// (BATCH_MATMUL's adj_x: lda 1, ask M); a runtime stride in the common one would cost registers.
// Epilogue: v = clamp(acc + bias, lo, hi); with `res`, v = clamp(v + R[m][n], rlo, rhi); with
// `post` (common.cl's post16), a folded PRELU (v >= 0 ? v : v * alpha[n], alpha padded as
// the bias), HARD_SWISH or swish (R rows ldc apart, like C). Batched: global dim 2 runs over
// bd0 * bd1 * bd2 batches; batch (b0, b1, b2)
// reads A at b0 * as0 + b1 * as1 + b2 * as2 and packed B at bs0.. (stride 0: broadcast) and
// writes C (and reads R) at b * M * ldc.
// GATED instantiation (a squeeze-excite gate folded in, ``fusion.plan_gate``): one more argument
// G[K], and A's column k counts G[k] times (each B row is scaled on load: NV multiplies per k
// against MR * NV FMAs), so C = (A diag(G)) . B without A diag(G) ever reaching memory.
// Work split: the (row block, panel) tiles, numbered row-major (all panels of a row block in turn:
// its A rows stay in L1, each C row is written by one work-item) or, with `panel_major` (weights
// outweigh activations), panel-major (all row blocks of a panel in turn: the panel is streamed
// once); each work-item takes `tpi` consecutive tiles (PoCL pays per work-group, and a long run
// of neighbouring tiles keeps caches and prefetchers busy). Global (ceil(tiles / tpi), 1,
// batches), local 1x1x1.
#define NR (16 * NV)

__kernel void GEMM_NAME(__global const float* restrict A, __global const float* restrict B,
                        __global const float* restrict bias, __global float* restrict C,
                        __global const float* restrict R, __global const float* restrict alpha,
                        const int M, const int N, const int K,
                        const int lda, const int ask, const int ldc, const float lo, const float hi,
                        const int res, const float rlo, const float rhi, const int bd1, const int bd2,
                        const int as0, const int as1, const int as2, const int bs0, const int bs1,
                        const int bs2, const int tpi, const int panel_major, const int post
#ifdef GATED
                        , __global const float* restrict G
#endif
                        ) {
  const int blocks = (M + MR - 1) / MR, panels = (N + NR - 1) / NR;
  const int t0 = get_global_id(0) * tpi;
  const int t1 = t0 + tpi < blocks * panels ? t0 + tpi : blocks * panels;
  const int bt = get_global_id(2);
  const __global float* A0 = A;
  const __global float* B0 = B;
  if (bt) {  // a batched launch (divisions only there)
    const int b0 = bt / (bd1 * bd2), b1 = (bt / bd2) % bd1, b2 = bt % bd2;
    A0 += b0 * as0 + b1 * as1 + b2 * as2;
    B0 += b0 * bs0 + b1 * bs1 + b2 * bs2;
  }
  // the first tile's (row block, panel) by division, the next ones by stepping
  int rb = panel_major ? t0 % blocks : t0 / panels, nb = panel_major ? t0 / blocks : t0 % panels;
  for (int t = t0; t < t1; t++) {
    const int n0 = N >= NR && nb * NR > N - NR ? N - NR : nb * NR;
    const int m0 = M >= MR && rb * MR > M - MR ? M - MR : rb * MR;
    const __global float* b = B0 + nb * (K * NR);
    // panel-major: while computing row block rb < NV of a panel, prefetch the next panel's lines
    // rb * K .. rb * K + K - 1 (one 64-byte line per k step), so streaming it from memory overlaps
    // the compute of the row blocks that reread this panel from L2 (5-15% on the weight-bound
    // 1x1 convolutions); otherwise the prefetches touch this panel's own, cached, lines
    const __global float* pf =
        panel_major && rb < NV && nb + 1 < panels ? b + K * NR + rb * (K * 16) : b;
    if (panel_major) {
      if (++rb == blocks) { rb = 0; nb++; }
    } else if (++nb == panels) {
      nb = 0;
      rb++;
    }
    const __global float* a[MR];
#pragma unroll
    for (int i = 0; i < MR; i++) a[i] = A0 + (m0 + i < M ? m0 + i : M - 1) * lda;

    f16u acc[MR][NV];
#pragma unroll
    for (int j = 0; j < NV; j++) {
      const f16u bv = LOAD16(bias + n0 + j * 16);
#pragma unroll
      for (int i = 0; i < MR; i++) acc[i][j] = bv;
    }
    for (int k = 0; k < K; k++) {
      PREFETCH(pf + k * 16);
      f16u bv[NV];
#ifdef GATED
      const float gk = G[k];
#pragma unroll
      for (int j = 0; j < NV; j++) bv[j] = LOAD16(b + k * NR + j * 16) * gk;
#else
#pragma unroll
      for (int j = 0; j < NV; j++) bv[j] = LOAD16(b + k * NR + j * 16);
#endif
#pragma unroll
      for (int i = 0; i < MR; i++) {
#ifdef STRIDED_A
        const float av = a[i][k * ask];
#else
        const float av = a[i][k];
#endif
#pragma unroll
        for (int j = 0; j < NV; j++) acc[i][j] = av * bv[j] + acc[i][j];
      }
    }
    const int o = bt * (M * ldc) + m0 * ldc + n0;
    __global float* c = C + o;
    const __global float* r = R + o;
    if (!res && !post && N >= NR && M >= MR) {  // a whole tile, no residual: plain stores
#pragma unroll
      for (int i = 0; i < MR; i++) {
#pragma unroll
        for (int j = 0; j < NV; j++) STORE16(c + i * ldc + j * 16, clamp16(acc[i][j], lo, hi));
      }
      continue;
    }
    // a residual or a post op, or fewer than MR rows or NR columns: through a private copy, row by
    // row in a rolled loop (less code to JIT; the residual layers have long K loops to hide it)
    f16u tmp[MR][NV];
#pragma unroll
    for (int i = 0; i < MR; i++) {
#pragma unroll
      for (int j = 0; j < NV; j++) tmp[i][j] = acc[i][j];
    }
    if (N >= NR && M >= MR) {
#pragma unroll 1
      for (int i = 0; i < MR; i++) {
#pragma unroll
        for (int j = 0; j < NV; j++) {
          f16u v = clamp16(tmp[i][j], lo, hi);
          if (res) v = clamp16(v + LOAD16(r + i * ldc + j * 16), rlo, rhi);
          if (post) v = post16(v, alpha + n0 + j * 16, post);
          STORE16(c + i * ldc + j * 16, v);
        }
      }
      continue;
    }
    const int rows = M - m0 < MR ? M - m0 : MR;
#pragma unroll 1
    for (int i = 0; i < rows; i++) {
#pragma unroll 1
      for (int j = 0; j < NV && j * 16 < N - n0; j++) {
        f16u v = clamp16(tmp[i][j], lo, hi);
        if (res) v = clamp16(v + load_upto(r + i * ldc + j * 16, N - n0 - j * 16), rlo, rhi);
        if (post) v = post16(v, alpha + n0 + j * 16, post);
        store_upto(c + i * ldc + j * 16, v, N - n0 - j * 16);
      }
    }
  }
}
#undef NR

#ifndef GEMM_PACK_B
#define GEMM_PACK_B
// Pack runtime B matrices into gemm's panels of nr columns: batch `bb` element (k, n) at
// bb * K * N + k * psk + n * psn (BATCH_MATMUL's adj_y swaps the strides) -> P[bb][NP/nr][K][nr],
// the last panel shifted back to end at column N when N >= nr, else zero-padded past N.
// Global (NP/nr, K, batches of B), local 1x1x1.
__kernel void gemm_pack_b(__global const float* restrict S, __global float* restrict P, const int K,
                          const int N, const int NP, const int nr, const int psk, const int psn) {
  const int nb = get_global_id(0), k = get_global_id(1), bb = get_global_id(2);
  const int n0 = N >= nr && nb * nr > N - nr ? N - nr : nb * nr;
  const __global float* s = S + bb * (K * N) + k * psk;
  __global float* p = P + bb * (NP * K) + (nb * K + k) * nr;
  for (int l = 0; l < nr; l++) {
    const int n = n0 + l;
    p[l] = n < N ? s[n * psn] : 0.0f;
  }
}
#endif
