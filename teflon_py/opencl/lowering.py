"""Design notes for phase 2 (no code yet): IR operations -> KernelSpecs -> one LaunchList.

One translator per op, used both to decide support and to build (Teflon's rule; JAX-style: an
op's check and lowering registered side by side, e.g. ``@lowering("CONV_2D")``). ``check``
runs the same validation as ``lower`` without touching a device, and every refusal is a
sentence a user can act on ("CONV_2D: filter is not constant", "int8 not lowered yet").

Per partition, in ``Delegate.compile``:
1. Walk the partition's ops in graph order; each lowers to zero or more ``kernels.KernelSpec``
   (RESHAPE/SQUEEZE of a contiguous tensor lowers to none: an alias of the same bytes).
2. Fuse as we go: a fused activation is the ACT_MIN/ACT_MAX macros of the producer (already
   there); a following RELU/RELU6 op folds into its producer when it is the only consumer; a
   residual ADD can fold into the producing gemm/conv2d later (a second input, same tile).
3. Lifetimes: a tensor lives from its producer's step to its last consumer's step; partition
   inputs/outputs are ``runtime.ExternalTensor`` (zero-copy on PoCL), every other tensor is a
   ``memory.Lifetime`` in one ``runtime.Arena`` (sub-buffers, alignment max(128, device's)).
4. ``spec.launch(dc, cache, buffers)`` creates each cl.Kernel once with its arguments set;
   the LaunchList gets ``after_first_run=cache.commit`` so binaries are cached post-JIT.

Float32 mapping of the kernels that exist:
- CONV_2D: 1x1 stride 1 -> gemm (M = N*H*W pixels); anything else -> conv2d.
- DEPTHWISE_CONV_2D -> depthwise (any depth multiplier; DM > 1 gathers, slower).
- FULLY_CONNECTED (constant weights) -> gemm; keep_num_dims only changes the output shape.
- BATCH_MATMUL with a constant RHS -> gemm per batch (or M = batch*rows when broadcast);
  a non-constant RHS needs a gemm variant that packs B on the device first.
Still to write for MobileNet/ResNet-class graphs: ADD/MUL (elementwise, broadcasting),
AVERAGE_POOL_2D / MAX_POOL_2D, MEAN (global pool), PAD, CONCATENATION (give gemm/conv2d an
output channel offset and row stride: gemm has LDC, conv2d needs the same), SOFTMAX and
LOGISTIC (exp approximation with a stated error bound, no builtins), then int8 via
``cl_kernels/quant.cl`` (bit-exact with ``teflon_py.quant``).
"""
