// The float32 LSTM (TFLite's EvalFloat), as teflon_py/fallback/lstm.py computes it: the input
// term of every time step in one launch (lstm_input), then per step the recurrent term
// (lstm_gates), the gates, the cell update and the hidden state (lstm_cell) and, with a
// projection, the projected output (lstm_project). Host side: teflon_py/opencl/lowerings/lstm.py.
//
// Gate rows are packed [G][n_cell] in the fallback's order (i, f, c, o; CIFG: f, c, o); GI, GF,
// GC and GO are their indices (GI absent with CIFG). A row of `units` = G * n_cell accumulators
// per batch row. Defines (lstm_cell only, which needs G): CIFG, PEEPHOLE, LAYER_NORM, ACT (0 NONE, 1 RELU, 2 RELU6,
// 3 RELU_N1_TO_1, 4 TANH, 5 SIGN_BIT, 6 CLAMP to [act_lo, act_hi]).

// pre[r][u] = bias[u] + x[r] . w[u] for every row r of every time step (bias 0 with layer norm,
// which adds it after normalising).
__kernel void lstm_input(__global const float* restrict X, __global const float* restrict W,
                         __global const float* restrict B, __global float* restrict O,
                         const int n_in, const int units) {
  const int r = get_global_id(0), u = get_global_id(1);
  const __global float* x = X + r * n_in;
  const __global float* w = W + u * n_in;
  float acc = 0.0f;
  for (int k = 0; k < n_in; k++) acc += x[k] * w[k];
  O[r * units + u] = B[u] + acc;
}

// acc[b][u] = pre[row(b)][u] + h[b] . w[u]: the step's input term (row pre_row0 + b * pre_bstride
// of `pre`) plus the recurrent term of the previous output state (at H + h_off).
__kernel void lstm_gates(__global const float* restrict P, __global const float* H, __global const float* restrict W,
                         __global float* restrict O, const int pre_row0, const int pre_bstride, const int h_off,
                         const int n_out, const int units) {
  const int b = get_global_id(0), u = get_global_id(1);
  const __global float* h = H + h_off + b * n_out;
  const __global float* w = W + u * n_out;
  float acc = 0.0f;
  for (int k = 0; k < n_out; k++) acc += h[k] * w[k];
  O[b * units + u] = P[(pre_row0 + b * pre_bstride) * units + u] + acc;
}

inline float lstm_sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }

// tensor_utils::ApplyActivationToVector
inline float lstm_act(float x, float lo, float hi) {
#if ACT == 0
  return x;
#elif ACT == 1
  return x < 0.0f ? 0.0f : x;
#elif ACT == 2
  return x < 0.0f ? 0.0f : (x > 6.0f ? 6.0f : x);
#elif ACT == 3
  return x < -1.0f ? -1.0f : (x > 1.0f ? 1.0f : x);
#elif ACT == 4
  return tanh(x);
#elif ACT == 5
  return signbit(x) ? 1.0f : 0.0f;
#else
  return x < lo ? lo : (x > hi ? hi : x);
#endif
}

inline float lstm_clip(float x, float limit) {
  return limit > 0.0f ? (x < -limit ? -limit : (x > limit ? limit : x)) : x;
}

#ifdef LAYER_NORM
// MeanStddevNormalization of gate g's row (left-to-right sums), times its weights, plus its bias.
inline void lstm_layer_norm(__global float* a, __global const float* lw, __global const float* lb, int n) {
  float sum = 0.0f;
  for (int j = 0; j < n; j++) sum += a[j];
  const float mean = sum / (float)n;
  float sq = 0.0f;
  for (int j = 0; j < n; j++) sq += (a[j] - mean) * (a[j] - mean);
  const float inv = 1.0f / sqrt(sq / (float)n + 1e-8f);
  for (int j = 0; j < n; j++) a[j] = (a[j] - mean) * inv * lw[j] + lb[j];
}
#endif

#ifdef G
// One batch row's units [j0, j0 + chunk) (chunk = n_cell with layer norm, whose statistics need
// the whole row): peephole, layer norm, activations, the cell update (C -> C_out, which may be
// the same bytes) and the hidden state output_gate * act(cell), written
// to M at m_off + b * n_cell and, with WRITE_Y, to Y's row y_row0 + b * y_bstride.
// peep: [3][n_cell] (i, f, o); ln_w, ln_b: [G][n_cell].
__kernel void lstm_cell(__global float* A, __global const float* C, __global float* C_out,
                        __global const float* restrict peep, __global const float* restrict ln_w,
                        __global const float* restrict ln_b, __global float* M, __global float* Y,
                        const int n_cell, const int chunk, const int m_off,
                        const int y_row0, const int y_bstride, const float cell_clip, const float act_lo,
                        const float act_hi) {
  const int b = get_global_id(0), j0 = get_global_id(1) * chunk;
  const int units = G * n_cell;
  __global float* a = A + b * units;
  const __global float* c_in = C + b * n_cell;
  __global float* c_new = C_out + b * n_cell;
#ifdef PEEPHOLE
  for (int j = j0; j < j0 + chunk; j++) {
#ifndef CIFG
    a[GI * n_cell + j] += peep[j] * c_in[j];
#endif
    a[GF * n_cell + j] += peep[n_cell + j] * c_in[j];
  }
#endif
#ifdef LAYER_NORM
#ifndef CIFG
  lstm_layer_norm(a + GI * n_cell, ln_w + GI * n_cell, ln_b + GI * n_cell, n_cell);
#endif
  lstm_layer_norm(a + GF * n_cell, ln_w + GF * n_cell, ln_b + GF * n_cell, n_cell);
  lstm_layer_norm(a + GC * n_cell, ln_w + GC * n_cell, ln_b + GC * n_cell, n_cell);
#endif
  for (int j = j0; j < j0 + chunk; j++) {
    const float f = lstm_sigmoid(a[GF * n_cell + j]);
    const float g = lstm_act(a[GC * n_cell + j], act_lo, act_hi);
#ifdef CIFG
    const float i = 1.0f - f;
#else
    const float i = lstm_sigmoid(a[GI * n_cell + j]);
#endif
    const float c = lstm_clip(f * c_in[j] + g * i, cell_clip);
    c_new[j] = c;
    a[GC * n_cell + j] = g;
#ifdef PEEPHOLE
    a[GO * n_cell + j] += peep[2 * n_cell + j] * c;
#endif
  }
#ifdef LAYER_NORM
  lstm_layer_norm(a + GO * n_cell, ln_w + GO * n_cell, ln_b + GO * n_cell, n_cell);
#endif
  for (int j = j0; j < j0 + chunk; j++) {
    const float o = lstm_sigmoid(a[GO * n_cell + j]);
#if ACT == 0
    const float h = o * a[GC * n_cell + j];  // LiteRT leaves the cell gate in place of act(cell)
#else
    const float h = o * lstm_act(c_new[j], act_lo, act_hi);
#endif
    M[m_off + b * n_cell + j] = h;
#ifdef WRITE_Y
    Y[(y_row0 + b * y_bstride) * n_cell + j] = h;
#endif
  }
}

#endif  // G

// The projection: h[b][o] = clip(bias[o] + m[b] . w[o]), to H at h_off and to Y's row
// y_row0 + b * y_bstride.
__kernel void lstm_project(__global const float* restrict M, __global const float* restrict W,
                           __global const float* restrict B, __global float* H, __global float* Y,
                           const int n_cell, const int n_out, const int h_off, const int y_row0,
                           const int y_bstride, const float proj_clip) {
  const int b = get_global_id(0), o = get_global_id(1);
  const __global float* m = M + b * n_cell;
  const __global float* w = W + o * n_cell;
  float acc = 0.0f;
  for (int k = 0; k < n_cell; k++) acc += m[k] * w[k];
  const float h = lstm_clip(B[o] + acc, proj_clip);
  H[h_off + b * n_out + o] = h;
  Y[(y_row0 + b * y_bstride) * n_out + o] = h;
}
