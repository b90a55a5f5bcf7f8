// Reductions (MEAN, SUM, REDUCE_PROD/MAX/MIN/ANY/ALL over any axes), SOFTMAX and LOG_SOFTMAX over the
// last axis, CUMSUM along one axis: every size an ARGUMENT (one program for every shape and type).

// The reductions see the input as kept dims (k0..k3, strides ks0..ks3) x reduced dims (r0..r3,
// strides rs0..rs3), both padded with leading 1s. Each work-item computes `opi` consecutive
// outputs; each folds its reduced elements one by one in row-major order from INIT (as TFLite's
// reference kernels do, so float sums and products round exactly as theirs), then FINISH.
// `seed_first`: the float MAX/MIN over every axis start from the first element instead of the
// neutral +-FLT_MAX (ReduceAllDims; a leading NaN then sticks). `count`: MEAN's divisor.
// Integer sums and products accumulate unsigned, so they wrap as TFLite's do (without C's
// undefined signed overflow). Global (ceil(n_out / opi)), local 1.
#define REDUCE_PARAMS                                                                              \
  const int n_out, const int opi, const int k1, const int k2, const int k3, const int ks0,         \
      const int ks1, const int ks2, const int ks3, const int r0, const int r1, const int r2,       \
      const int r3, const int rs0, const int rs1, const int rs2, const int rs3,                    \
      const int seed_first, const float count

#define REDUCE(NAME, T, A, INIT, FOLD, FINISH)                                                     \
  __kernel void NAME(__global const T* restrict in, __global T* restrict out, REDUCE_PARAMS) {     \
    const int o0 = get_global_id(0) * opi;                                                         \
    const int o1 = o0 + opi < n_out ? o0 + opi : n_out;                                            \
    for (int o = o0; o < o1; o++) {                                                                \
      int q = o;                                                                                   \
      const int j3 = q % k3; q /= k3;                                                              \
      const int j2 = q % k2; q /= k2;                                                              \
      const int j1 = q % k1; const int j0 = q / k1;                                                \
      const __global T* p = in + j0 * ks0 + j1 * ks1 + j2 * ks2 + j3 * ks3;                        \
      A acc = INIT;                                                                                \
      for (int a = 0; a < r0; a++)                                                                 \
        for (int b = 0; b < r1; b++)                                                               \
          for (int c = 0; c < r2; c++)                                                             \
            for (int d = 0; d < r3; d++) {                                                         \
              const A v = (A)p[a * rs0 + b * rs1 + c * rs2 + d * rs3];                             \
              acc = FOLD;                                                                          \
            }                                                                                      \
      out[o] = FINISH;                                                                             \
    }                                                                                              \
  }

REDUCE(mean, float, float, 0.0f, acc + v, acc / count)
REDUCE(sum_f32, float, float, 0.0f, acc + v, acc)
REDUCE(prod_f32, float, float, 1.0f, acc * v, acc)
REDUCE(max_f32, float, float, seed_first ? p[0] : -FLT_MAX, v > acc ? v : acc, acc)
REDUCE(min_f32, float, float, seed_first ? p[0] : FLT_MAX, v < acc ? v : acc, acc)
REDUCE(sum_i32, int, uint, 0u, acc + v, as_int(acc))
REDUCE(prod_i32, int, uint, 1u, acc * v, as_int(acc))
REDUCE(max_i32, int, int, INT_MIN, v > acc ? v : acc, acc)
REDUCE(min_i32, int, int, INT_MAX, v < acc ? v : acc, acc)
REDUCE(sum_i64, long, ulong, 0ul, acc + v, as_long(acc))
REDUCE(prod_i64, long, ulong, 1ul, acc * v, as_long(acc))
REDUCE(max_i64, long, long, LONG_MIN, v > acc ? v : acc, acc)
REDUCE(min_i64, long, long, LONG_MAX, v < acc ? v : acc, acc)
REDUCE(any_b8, uchar, uchar, 0, acc | v, acc != 0)  // bool tensors: one byte each, 0 or 1
REDUCE(all_b8, uchar, uchar, 1, acc & (v != 0), acc)

// MEAN over the middle axis of [outer][n][inner] (inner >= 16; MobileNet's average over HxW):
// each work-item sums `bpi` consecutive 16-channel blocks of one outer index over the n rows in
// order (the same sequential float sums as `mean`, 16 outputs at a time), then divides by
// `count`. The last block is shifted back to end at `inner` (overlaps stored twice, equal).
// Global (outer * ceil(ceil(inner / 16) / bpi)), local 1.
__kernel void mean_mid(__global const float* restrict in, __global float* restrict out, const int n,
                       const int inner, const int bpi, const float count) {
  const int blocks = (inner + 15) / 16, per = (blocks + bpi - 1) / bpi;
  const int g = get_global_id(0), oi = g / per, b0 = (g % per) * bpi;
  const int b1 = b0 + bpi < blocks ? b0 + bpi : blocks;
  for (int b = b0; b < b1; b++) {
    const int c = b * 16 > inner - 16 ? inner - 16 : b * 16;
    const __global float* p = in + oi * (n * inner) + c;
    f16u acc = (f16u)(0.0f);
    for (int i = 0; i < n; i++) acc = acc + LOAD16(p + i * inner);
    STORE16(out + oi * inner + c, acc / (f16u)(count));
  }
}

// SOFTMAX of each row of `depth` floats: exp((x - max) * beta) / sum. One row per work-item.
// Global (rows), local 1.
__kernel void softmax(__global const float* restrict in, __global float* restrict out,
                      const int depth, const float beta) {
  const __global float* x = in + get_global_id(0) * depth;
  __global float* y = out + get_global_id(0) * depth;
  float m = x[0];
  for (int i = 1; i < depth; i++) m = x[i] > m ? x[i] : m;
  // exp 16 lanes at a time (the 16-lane builtin: one call per 16 elements on a PoCL that inlines
  // no builtin), summed in 16 partial sums (float32 sums in another order: ~1e-7 relative)
  f16v acc = 0.0f;
  int i = 0;
  for (; i + 16 <= depth; i += 16) {
    const f16v e = exp((LOAD16(x + i) - m) * beta);
    STORE16(y + i, e);
    acc += e;
  }
  float sum = 0.0f;
  for (int l = 0; l < 16; l++) sum += acc[l];
  for (; i < depth; i++) {
    const float e = exp((x[i] - m) * beta);
    y[i] = e;
    sum += e;
  }
  i = 0;
  for (; i + 16 <= depth; i += 16) STORE16(y + i, LOAD16(y + i) / sum);
  for (; i < depth; i++) y[i] = y[i] / sum;
}

// LOG_SOFTMAX of each row, as reference_ops::LogSoftmax: (x - max) - log(sum of exp(x - max)),
// the sum accumulated in order. One row per work-item. Global (rows), local 1.
__kernel void log_softmax(__global const float* restrict in, __global float* restrict out,
                          const int depth) {
  const __global float* x = in + get_global_id(0) * depth;
  __global float* y = out + get_global_id(0) * depth;
  float m = -FLT_MAX;
  for (int i = 0; i < depth; i++) m = x[i] > m ? x[i] : m;
  float sum = 0.0f;
  for (int i = 0; i < depth; i++) sum += exp(x[i] - m);
  const float log_sum = log(sum);
  for (int i = 0; i < depth; i++) y[i] = (x[i] - m) - log_sum;
}

// CUMSUM along an axis of `n` elements: the input seen as [outer][n][inner]; work-item g scans
// column (g / inner, g % inner) in order (from the end when `reverse`), each output the sum of
// the elements before it (`exclusive`) or up to it, accumulated sequentially in the input type
// (integers unsigned, so they wrap). Global (columns), local 1.
#define CUMSUM(NAME, T, A, CAST)                                                                   \
  __kernel void NAME(__global const T* restrict in, __global T* restrict out, const int columns,   \
                     const int n, const int inner, const int exclusive, const int reverse) {       \
    const int g = get_global_id(0);                                                                \
    if (g >= columns) return;                                                                      \
    const int base = (g / inner) * n * inner + g % inner;                                          \
    const int step = reverse ? -inner : inner;                                                     \
    int idx = reverse ? base + (n - 1) * inner : base;                                             \
    A acc = 0;                                                                                     \
    for (int k = 0; k < n; k++, idx += step) {                                                     \
      const A v = (A)in[idx];                                                                      \
      if (exclusive) {                                                                             \
        out[idx] = CAST(acc);                                                                      \
        acc += v;                                                                                  \
      } else {                                                                                     \
        acc += v;                                                                                  \
        out[idx] = CAST(acc);                                                                      \
      }                                                                                            \
    }                                                                                              \
  }

CUMSUM(cumsum_f32, float, float, )
CUMSUM(cumsum_i32, int, uint, as_int)
CUMSUM(cumsum_i64, long, ulong, as_long)
