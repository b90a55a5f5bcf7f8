// The integer 8x8->16 LSTM (TFLite's EvalInteger8x8_16), bit-exact with
// teflon_py/fallback/lstm_integer.py: int8 input, weights and output state, int16 cell state,
// gates in Q3.12 through gemmlowp's int16 logistic / tanh (fixedpoint16.cl). After quant.cl and
// fixedpoint16.cl. Launches as lstm.cl's: qlstm_input once, then per step qlstm_gates,
// qlstm_cell and (projection) qlstm_project. Host side: teflon_py/opencl/lowerings/lstm.py.
//
// Gate rows packed [G][n_cell] in the fallback's order (i, f, c, o; CIFG: f, c, o). QP holds per
// gate slot QP_STRIDE ints: the input, recurrent, peephole and layer-norm (multiplier, shift)
// pairs, then the layer norm's variance guard. Biases arrive wrapped to int32 (sums wrap anyway).

#define QP_STRIDE 9

// The wrapped int32 sum of an int8 dot product and a bias.
inline int ql_dot(const __global char* a, const __global char* w, int n, int bias) {
  int acc = 0;
  for (int k = 0; k < n; k++) acc += (int)a[k] * (int)w[k];
  return (int)((uint)acc + (uint)bias);
}

// pre[r][u] = clamp16(MBQM(x[r] . w[u] + bias[u])) for every row of every time step.
__kernel void qlstm_input(__global const char* restrict X, __global const char* restrict W,
                          __global const int* restrict B, __global const int* restrict QP,
                          __global int* restrict O, const int n_in, const int n_cell, const int units) {
  const int r = get_global_id(0), u = get_global_id(1);
  const __global int* qp = QP + (u / n_cell) * QP_STRIDE;
  O[r * units + u] = f16_clamp(q_mbqm(ql_dot(X + r * n_in, W + u * n_in, n_in, B[u]), qp[0], qp[1]));
}

// acc[b][u] = clamp16(MBQM(h[b] . w[u] + bias[u]) + pre[row(b)][u]).
__kernel void qlstm_gates(__global const int* restrict P, __global const char* H, __global const char* restrict W,
                          __global const int* restrict B, __global const int* restrict QP,
                          __global int* restrict O, const int pre_row0, const int pre_bstride, const int h_off,
                          const int n_out, const int n_cell, const int units) {
  const int b = get_global_id(0), u = get_global_id(1);
  const __global int* qp = QP + (u / n_cell) * QP_STRIDE;
  const int rec = q_mbqm(ql_dot(H + h_off + b * n_out, W + u * n_out, n_out, B[u]), qp[2], qp[3]);
  O[b * units + u] = f16_clamp(rec + P[(pre_row0 + b * pre_bstride) * units + u]);
}

#ifdef G
// tensor_utils::ApplyLayerNorm on gate g's int16 row, in place: mean and variance in 64 bits,
// 1/stddev from GetInvSqrtQuantizedMultiplierExp, the result in Q3.12.
inline void ql_layer_norm(__global int* a, const __global short* lw, const __global int* lb,
                          const __global int* qp, int n) {
  long total = 0, squares = 0;
  for (int j = 0; j < n; j++) {
    total += a[j];
    squares += (long)a[j] * a[j];
  }
  const long mean = total * 1024 / n;
  long variance = (squares * ((1L << 20) / n) - mean * mean) / (1L << 20);
  int var32 = (int)(uint)(ulong)variance;
  var32 = var32 < 1 ? qp[8] : var32;
  int inv_shift;
  const int inv_m = f16_inv_sqrt(var32, &inv_shift);
  for (int j = 0; j < n; j++) {
    const int rescaled = q_mbqm((int)((uint)(1024 * (long)a[j] - mean)), inv_m, inv_shift);
    const long val3 = (long)(int)(uint)(ulong)((long)rescaled * lw[j] + lb[j]);
    const long val4 = (val3 + (val3 > 0 ? 512 : -512)) / 1024;
    a[j] = f16_clamp(q_mbqm((int)(uint)(ulong)val4, qp[6], qp[7] + 12));
  }
}

// The peephole term of unit j of batch row b (VectorBatchVectorCwiseProductAccumulate over n_out
// elements per row: of the flat cell state when `flat`, time-major, else of each row's start).
inline int ql_peephole(const __global short* w, int c, int b, int j, int n_cell, int n_out, int batch, int flat,
                       const __global int* qp) {
  int k;
  if (flat) {
    const int f = b * n_cell + j;
    if (f >= batch * n_out) return 0;
    k = f % n_out;
  } else {
    if (j >= n_out) return 0;
    k = j;
  }
  return q_mbqm((int)w[k] * c, qp[4], qp[5]);
}

// One batch row's units [j0, j0 + chunk) (chunk = n_cell with layer norm): peephole, layer norm,
// int16 gate activations, UpdateLstmCellInteger (C at c_off -> C_out, maybe the same bytes) and
// the hidden state MBQM(o * tanh(cell)): plus hidden_zp to M (the output state, and Y with
// WRITE_Y) or, with a projection, minus hidden_zp to M (the projection's input).
__kernel void qlstm_cell(__global int* A, __global const short* C, __global short* C_out,
                         __global const short* restrict peep, __global const short* restrict ln_w,
                         __global const int* restrict ln_b, __global const int* restrict QP, __global char* M,
                         __global char* Y, const int n_cell, const int n_out, const int batch, const int chunk,
                         const int m_off, const int y_row0, const int y_bstride, const int peep_flat,
                         const int cell_scale, const int cell_clip, const int hidden_m, const int hidden_s,
                         const int hidden_zp) {
  const int b = get_global_id(0), j0 = get_global_id(1) * chunk;
  const int units = G * n_cell;
  __global int* a = A + b * units;
  const __global short* c_in = C + b * n_cell;
  __global short* c_new = C_out + b * n_cell;
#ifdef PEEPHOLE
  for (int j = j0; j < j0 + chunk; j++) {
#ifndef CIFG
    a[GI * n_cell + j] = f16_clamp(ql_peephole(peep, c_in[j], b, j, n_cell, n_out, batch, peep_flat,
                                               QP + GI * QP_STRIDE) + a[GI * n_cell + j]);
#endif
    a[GF * n_cell + j] = f16_clamp(ql_peephole(peep + n_cell, c_in[j], b, j, n_cell, n_out, batch, peep_flat,
                                               QP + GF * QP_STRIDE) + a[GF * n_cell + j]);
  }
#endif
#ifdef LAYER_NORM
#ifndef CIFG
  ql_layer_norm(a + GI * n_cell, ln_w + GI * n_cell, ln_b + GI * n_cell, QP + GI * QP_STRIDE, n_cell);
#endif
  ql_layer_norm(a + GF * n_cell, ln_w + GF * n_cell, ln_b + GF * n_cell, QP + GF * QP_STRIDE, n_cell);
  ql_layer_norm(a + GC * n_cell, ln_w + GC * n_cell, ln_b + GC * n_cell, QP + GC * QP_STRIDE, n_cell);
#endif
  for (int j = j0; j < j0 + chunk; j++) {
    const int f = f16_logistic(a[GF * n_cell + j], 3);
    const int g = f16_tanh(a[GC * n_cell + j], 3);
#ifdef CIFG
    const int i = 32767 - f;
#else
    const int i = f16_logistic(a[GI * n_cell + j], 3);
#endif
    const int kept = f16_wrap(q_rdbpot(f * (int)c_in[j], 15));
    const int added = f16_wrap(q_rdbpot(i * g, 30 + cell_scale));
    int c = f16_clamp(kept + added);
    if (cell_clip > 0) c = c < -cell_clip ? -cell_clip : (c > cell_clip ? cell_clip : c);
    c_new[j] = (short)c;
#ifdef PEEPHOLE
    a[GO * n_cell + j] = f16_clamp(ql_peephole(peep + 2 * n_cell, c, b, j, n_cell, n_out, batch, peep_flat,
                                               QP + GO * QP_STRIDE) + a[GO * n_cell + j]);
#endif
  }
#ifdef LAYER_NORM
  ql_layer_norm(a + GO * n_cell, ln_w + GO * n_cell, ln_b + GO * n_cell, QP + GO * QP_STRIDE, n_cell);
#endif
  for (int j = j0; j < j0 + chunk; j++) {
    const int o = f16_logistic(a[GO * n_cell + j], 3);
    const int hidden = q_mbqm(o * f16_tanh(c_new[j], 15 + cell_scale), hidden_m, hidden_s);
#ifdef WRITE_Y
    int h = hidden + hidden_zp;
#else
    int h = hidden - hidden_zp;
#endif
    h = h < -128 ? -128 : (h > 127 ? 127 : h);
    M[m_off + b * n_cell + j] = (char)h;
#ifdef WRITE_Y
    Y[(y_row0 + b * y_bstride) * n_cell + j] = (char)h;
#endif
  }
}
#endif  // G

// The projection: h[b][o] = clamp(MBQM(m[b] . w[o] + bias[o]) + state_zp), clipped, to H at h_off
// and to Y's row y_row0 + b * y_bstride.
__kernel void qlstm_project(__global const char* restrict M, __global const char* restrict W,
                            __global const int* restrict B, __global char* H, __global char* Y,
                            const int n_cell, const int n_out, const int h_off, const int y_row0,
                            const int y_bstride, const int proj_m, const int proj_s, const int state_zp,
                            const int proj_clip) {
  const int b = get_global_id(0), o = get_global_id(1);
  int h = q_mbqm(ql_dot(M + b * n_cell, W + o * n_cell, n_cell, B[o]), proj_m, proj_s) + state_zp;
  h = h < -128 ? -128 : (h > 127 ? 127 : h);
  if (proj_clip > 0) h = h < -proj_clip ? -proj_clip : (h > proj_clip ? proj_clip : h);
  H[h_off + b * n_out + o] = (char)h;
  Y[(y_row0 + b * y_bstride) * n_out + o] = (char)h;
}
