// Data-movement kernels. They copy bits, never values, so one kernel per element SIZE serves every
// dtype of that size: suffix u8 (int8, uint8, bool), u16 (int16), u32 (float32, int32), u64 (int64).
// Sizes, strides, offsets and fill values arrive as kernel ARGUMENTS: one program serves every
// shape and op (a build costs ~0.5 s cold; these ops are cheap, shape macros would cost more).
//
// Work split (host: teflon_py.opencl.kernels.row_blocks): the output is `rows` rows of `n4`
// elements; a work-item takes `rpi` whole rows, or one `chunk`-long piece of one long row.
// Global size (pieces, row blocks), local 1x1. Index math is int: the host rejects tensors of
// 2^31 elements or more (2^28 for the table kernel, whose padding marker is -2^28).

#define ROW_RANGE                                                   \
  const int c0 = get_global_id(0) * chunk;                          \
  const int c1 = c0 + chunk < n4 ? c0 + chunk : n4;                 \
  const int r0 = get_global_id(1) * rpi;                            \
  const int r1 = r0 + rpi < rows ? r0 + rpi : rows;

// D[d_off + i.ds] = S[s_off + i.ss] for i over n0 x n1 x n2 x n3 x n4 (n0 = rows / (n1 n2 n3)):
// CONCATENATION, PACK, SPLIT, UNPACK, SLICE, STRIDED_SLICE, TRANSPOSE, DEPTH/SPACE reshuffles.
// Strides may be negative (reversed axes); the inner loop is a plain copy when both are 1. Rows
// step their indices instead of dividing (a copy of 2-element rows, as a 2x2 upsampling's tile
// placement, spent most of its time in the six divisions per row).
#define COPY(SFX, T)                                                                               \
  __kernel void copy_##SFX(__global const T* restrict S, __global T* restrict D, const int s_off,  \
                           const int d_off, const int rows, const int rpi, const int n4,           \
                           const int chunk, const int n1, const int n2, const int n3,              \
                           const int ss0, const int ss1, const int ss2, const int ss3,             \
                           const int ss4, const int ds0, const int ds1, const int ds2,             \
                           const int ds3, const int ds4) {                                         \
    ROW_RANGE                                                                                      \
    int q = r0; /* the first row's indices by division, the next ones by stepping */               \
    int i3 = q % n3; q /= n3;                                                                      \
    int i2 = q % n2; q /= n2;                                                                      \
    int i1 = q % n1; int i0 = q / n1;                                                              \
    const __global T* s = S + (s_off + i0 * ss0 + i1 * ss1 + i2 * ss2 + i3 * ss3);                 \
    __global T* d = D + (d_off + i0 * ds0 + i1 * ds1 + i2 * ds2 + i3 * ds3);                       \
    for (int r = r0; r < r1; r++) {                                                                \
      if (ss4 == 1 && ds4 == 1) {                                                                  \
        for (int c = c0; c < c1; c++) d[c] = s[c];                                                 \
      } else {                                                                                     \
        for (int c = c0; c < c1; c++) d[c * ds4] = s[c * ss4];                                     \
      }                                                                                            \
      s += ss3;                                                                                    \
      d += ds3;                                                                                    \
      if (++i3 == n3) {                                                                            \
        i3 = 0;                                                                                    \
        if (++i2 == n2) {                                                                          \
          i2 = 0;                                                                                  \
          if (++i1 == n1) { i1 = 0; i0++; }                                                        \
        }                                                                                          \
        s = S + (s_off + i0 * ss0 + i1 * ss1 + i2 * ss2);                                          \
        d = D + (d_off + i0 * ds0 + i1 * ds1 + i2 * ds2);                                          \
      }                                                                                            \
    }                                                                                              \
  }

// A copy whose source runs contiguously along dim 3 (ss3 == 1) and destination along dim 4
// (ds4 == 1): transposes such as NHWC <-> NCHW. A work-item moves a tile of `tj` indices of dim 3
// (one cache line of source) by up to TILE_C of dim 4: each source line is read whole once, and
// the tile's tj destination runs stay in L1 while they fill. (Reading along dim 4 instead, with
// contiguous writes, thrashes L1 when the source stride is a multiple of 4 KiB.)
// Global (ceil(n4 / TILE_C), n0 n1 n2 ceil(n3 / tj)).
#define TILE_C 64
#define TRANSPOSE(SFX, T)                                                                          \
  __kernel void transpose_##SFX(__global const T* restrict S, __global T* restrict D,              \
                                const int s_off, const int d_off, const int n4, const int n1,      \
                                const int n2, const int n3, const int ss0, const int ss1,          \
                                const int ss2, const int ss4, const int ds0, const int ds1,        \
                                const int ds2, const int ds3, const int tj) {                      \
    const int c0 = get_global_id(0) * TILE_C;                                                      \
    const int c1 = c0 + TILE_C < n4 ? c0 + TILE_C : n4;                                            \
    const int blocks = (n3 + tj - 1) / tj;                                                         \
    int q = get_global_id(1);                                                                      \
    const int j0 = (q % blocks) * tj;                                                              \
    const int j1 = j0 + tj < n3 ? j0 + tj : n3;                                                    \
    q /= blocks;                                                                                   \
    const int i2 = q % n2; q /= n2;                                                                \
    const int i1 = q % n1; const int i0 = q / n1;                                                  \
    const __global T* s = S + (s_off + i0 * ss0 + i1 * ss1 + i2 * ss2);                            \
    __global T* d = D + (d_off + i0 * ds0 + i1 * ds1 + i2 * ds2);                                  \
    for (int c = c0; c < c1; c++) {                                                                \
      const __global T* sc = s + c * ss4;                                                          \
      for (int j = j0; j < j1; j++) d[j * ds3 + c] = sc[j];                                        \
    }                                                                                              \
  }

// PAD / PADV2 of a (collapsed) rank-5 tensor: output rows of o4 elements, `rpi` rows per
// work-item; i0..i4 the input dims, p0..p4 the padding before each, `value` the fill.
// Global (1, row blocks).
#define PAD(SFX, T)                                                                                \
  __kernel void pad_##SFX(__global const T* restrict S, __global T* restrict D, const int rows,    \
                          const int rpi, const int o1, const int o2, const int o3, const int o4,   \
                          const int i0, const int i1, const int i2, const int i3, const int i4,    \
                          const int p0, const int p1, const int p2, const int p3, const int p4,    \
                          const T value) {                                                         \
    const int r0 = get_global_id(1) * rpi;                                                         \
    const int r1 = r0 + rpi < rows ? r0 + rpi : rows;                                              \
    for (int r = r0; r < r1; r++) {                                                                \
      __global T* d = D + r * o4;                                                                  \
      int q = r;                                                                                   \
      const int j3 = q % o3 - p3; q /= o3;                                                         \
      const int j2 = q % o2 - p2; q /= o2;                                                         \
      const int j1 = q % o1 - p1; const int j0 = q / o1 - p0;                                      \
      if ((uint)j0 >= (uint)i0 || (uint)j1 >= (uint)i1 || (uint)j2 >= (uint)i2 ||                  \
          (uint)j3 >= (uint)i3) {                                                                  \
        for (int c = 0; c < o4; c++) d[c] = value;                                                 \
        continue;                                                                                  \
      }                                                                                            \
      const __global T* s = S + (((j0 * i1 + j1) * i2 + j2) * i3 + j3) * i4;                       \
      for (int c = 0; c < p4; c++) d[c] = value;                                                   \
      for (int c = 0; c < i4; c++) d[p4 + c] = s[c];                                               \
      for (int c = p4 + i4; c < o4; c++) d[c] = value;                                             \
    }                                                                                              \
  }

// out[i] = S[t0[i0] + t1[i1] + t2[i2] + t3[i3] + t4[i4]], or `value` where that sum is negative
// (an entry of -2^28 marks padding): TILE, MIRROR_PAD, RESIZE_NEAREST_NEIGHBOR. The per-axis
// tables lie end to end in TAB; `lin` says t4[c] == c (a plain copy of each row).
#define TABLE(SFX, T)                                                                              \
  __kernel void table_##SFX(__global const T* restrict S, __global const int* restrict TAB,        \
                            __global T* restrict D, const int rows, const int rpi, const int n4,   \
                            const int chunk, const int n0, const int n1, const int n2,             \
                            const int n3, const int lin, const T value) {                          \
    ROW_RANGE                                                                                      \
    const __global int* t1 = TAB + n0;                                                             \
    const __global int* t2 = t1 + n1;                                                              \
    const __global int* t3 = t2 + n2;                                                              \
    const __global int* t4 = t3 + n3;                                                              \
    for (int r = r0; r < r1; r++) {                                                                \
      int q = r;                                                                                   \
      const int i3 = q % n3; q /= n3;                                                              \
      const int i2 = q % n2; q /= n2;                                                              \
      const int i1 = q % n1; const int i0 = q / n1;                                                \
      const int base = TAB[i0] + t1[i1] + t2[i2] + t3[i3];                                         \
      __global T* d = D + r * n4;                                                                  \
      if (base < 0) {                                                                              \
        for (int c = c0; c < c1; c++) d[c] = value;                                                \
      } else if (lin) {                                                                            \
        const __global T* s = S + base;                                                            \
        for (int c = c0; c < c1; c++) d[c] = s[c];                                                 \
      } else {                                                                                     \
        for (int c = c0; c < c1; c++) {                                                            \
          const int off = t4[c];                                                                   \
          d[c] = off < 0 ? value : S[base + off];                                                  \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }

// GATHER along one axis: output row r = (b * outer + o) * npos + j (rows of n4 elements) is
// input row (b * outer + o) * axis + IDX[b * npos + j]. An index outside [0, axis) gives zeros
// (TFLite fails the invoke instead).
#define GATHER(SFX, T)                                                                             \
  __kernel void gather_##SFX(__global const T* restrict S, __global const int* restrict IDX,       \
                             __global T* restrict D, const int rows, const int rpi, const int n4,  \
                             const int chunk, const int npos, const int outer, const int axis) {   \
    ROW_RANGE                                                                                      \
    for (int r = r0; r < r1; r++) {                                                                \
      const int q = r / npos;                                                                      \
      const int k = IDX[(q / outer) * npos + r % npos];                                            \
      __global T* d = D + r * n4;                                                                  \
      if ((uint)k >= (uint)axis) {                                                                 \
        for (int c = c0; c < c1; c++) d[c] = (T)0;                                                 \
        continue;                                                                                  \
      }                                                                                            \
      const __global T* s = S + (q * axis + k) * n4;                                               \
      for (int c = c0; c < c1; c++) d[c] = s[c];                                                   \
    }                                                                                              \
  }

// ONE_HOT: out[o][k][i] = IDX[o * inner + i] == k ? on : off over n elements, `chunk` per
// work-item, global (ceil(n / chunk)). `wide`: int64 indices, of which only the low int word
// counts (little-endian), as TFLite's static_cast<int>.
#define ONE_HOT(SFX, T)                                                                            \
  __kernel void one_hot_##SFX(__global const int* restrict IDX, __global T* restrict D,            \
                              const int n, const int chunk, const int depth, const int inner,      \
                              const int wide, const T on, const T off) {                           \
    const int e0 = get_global_id(0) * chunk;                                                       \
    const int e1 = e0 + chunk < n ? e0 + chunk : n;                                                \
    for (int e = e0; e < e1; e++) {                                                                \
      const int q = e / inner;                                                                     \
      const int p = (q / depth) * inner + e % inner;                                               \
      D[e] = IDX[wide ? 2 * p : p] == q % depth ? on : off;                                        \
    }                                                                                              \
  }

#define MOVEMENT(SFX, T) \
  COPY(SFX, T) TRANSPOSE(SFX, T) PAD(SFX, T) TABLE(SFX, T) GATHER(SFX, T) ONE_HOT(SFX, T)

MOVEMENT(u8, uchar)
MOVEMENT(u16, ushort)
MOVEMENT(u32, uint)
MOVEMENT(u64, ulong)
