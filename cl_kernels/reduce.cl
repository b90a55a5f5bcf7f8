// MEAN over any axes and SOFTMAX over the last axis, every size an ARGUMENT (one program).

// MEAN: the input seen as kept dims (k0..k3, strides ks0..ks3) x reduced dims (r0..r3, strides
// rs0..rs3), both padded with leading 1s. Each work-item computes `opi` consecutive outputs;
// each sums its reduced elements in row-major order in float (as TFLite's reference does), then
// divides by `count`. Global (ceil(n_out / opi)), local 1.
__kernel void mean(__global const float* restrict in, __global float* restrict out, const int n_out,
                   const int opi, const int k1, const int k2, const int k3, const int ks0,
                   const int ks1, const int ks2, const int ks3, const int r0, const int r1,
                   const int r2, const int r3, const int rs0, const int rs1, const int rs2,
                   const int rs3, const float count) {
  const int o0 = get_global_id(0) * opi;
  const int o1 = o0 + opi < n_out ? o0 + opi : n_out;
  for (int o = o0; o < o1; o++) {
    int q = o;
    const int j3 = q % k3; q /= k3;
    const int j2 = q % k2; q /= k2;
    const int j1 = q % k1; const int j0 = q / k1;
    const __global float* p = in + j0 * ks0 + j1 * ks1 + j2 * ks2 + j3 * ks3;
    float sum = 0.0f;
    for (int a = 0; a < r0; a++)
      for (int b = 0; b < r1; b++)
        for (int c = 0; c < r2; c++)
          for (int d = 0; d < r3; d++) sum += p[a * rs0 + b * rs1 + c * rs2 + d * rs3];
    out[o] = sum / count;
  }
}

// SOFTMAX of each row of `depth` floats: exp((x - max) * beta) / sum, the sum accumulated in
// order as TFLite's reference kernel does. One row per work-item. Global (rows), local 1.
__kernel void softmax(__global const float* restrict in, __global float* restrict out,
                      const int depth, const float beta) {
  const __global float* x = in + get_global_id(0) * depth;
  __global float* y = out + get_global_id(0) * depth;
  float m = x[0];
  for (int i = 1; i < depth; i++) m = x[i] > m ? x[i] : m;
  float sum = 0.0f;
  for (int i = 0; i < depth; i++) {
    const float e = exp((x[i] - m) * beta);
    y[i] = e;
    sum += e;
  }
  for (int i = 0; i < depth; i++) y[i] = y[i] / sum;
}
