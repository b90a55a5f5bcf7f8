// Shared by math.cl and compare.cl (each built as one program with this file in front): the index
// arithmetic of a numpy broadcast collapsed on the host (teflon_py.opencl.ops_elementwise
// .broadcast_geometry_n) to four outer dimensions (d0 implied by the row count) and an inner one
// that each operand reads with stride 1 or 0.
//
// Work split (host: teflon_py.opencl.kernels.row_blocks): rows of `inner` elements; a work-item
// takes `rpi` whole rows, or one `chunk`-long piece of one long row. Global size
// (pieces, row blocks), local 1x1.
//
// These kernels hold several ops each, chosen by an `op` argument outside the element loops: PoCL
// compiles every kernel of a program when its binary is cached (~0.1 s each, cold), so a handful
// of switch kernels costs far less than one kernel per op.

// lo/hi = -inf/+inf when unbounded; NaN passes through, as in TFLite's ActivationFunctionWithMinMax.
#define CLAMP(v) ((v) < lo ? lo : ((v) > hi ? hi : (v)))

#define SIZE_ARGS const int rows, const int rpi, const int inner, const int chunk
#define DIM_ARGS const int d1, const int d2, const int d3
#define STRIDE_ARGS(S) const int S##0, const int S##1, const int S##2, const int S##3

// This work-item's rows [r0, r1) and, within each, elements [c0, c1).
#define ROW_RANGE                                            \
  const int c0 = get_global_id(0) * chunk;                   \
  const int c1 = c0 + chunk < inner ? c0 + chunk : inner;    \
  const int r0 = get_global_id(1) * rpi;                     \
  const int r1 = r0 + rpi < rows ? r0 + rpi : rows;

// Row r's outer indices i0..i3, and an operand's element offset at them (S: its stride prefix).
#define OUTER_INDEX(r)                      \
  int q = (r);                              \
  const int i3 = q % d3; q /= d3;           \
  const int i2 = q % d2; q /= d2;           \
  const int i1 = q % d1; const int i0 = q / d1;
#define OFFSET(S) (i0 * S##0 + i1 * S##1 + i2 * S##2 + i3 * S##3)
