// The vector vocabulary of every kernel: programs.py puts this file first in every program.
// Kernel files do 16-wide memory access, narrowing, byte-quad reads and prefetches only through
// these names, which have two renderings, chosen per device (Caps.clang_vectors, which sets
// TEFLON_CLANG_VECTORS in every program built for the device):
//
// - TEFLON_CLANG_VECTORS (PoCL's CPU devices): clang's vector extensions. PyPI's PoCL 3.0 does
//   not inline OpenCL builtins on CPUs (vload16, convert_* become real calls, up to 10x slower in
//   a hot loop), so loads and stores go through typedefs with the element's alignment, and
//   conversions through __builtin_convertvector; a prefetch is __builtin_prefetch.
// - otherwise standard OpenCL C 1.2: vload16/vstore16, convert_*, as_*, legal widths (2, 3, 4,
//   8, 16) only. Other compilers take nothing else: Mesa rusticl's SPIR-V translator aborts the
//   whole process on llvm.prefetch or a 64-wide vector.
//
// A kernel needing more than this (qconv's 64-byte shuffles, AVX-512 VNNI) keeps its clang code
// behind #ifdef TEFLON_CLANG_VECTORS with a standard path beside it.
//
// LOAD16(p) / STORE16(p, v)    16 floats at a float pointer
// LOAD8(p) / STORE8(p, v)      8 floats (f8u) at a float pointer: conv2d.cl's narrow tiles
// STORE16_PRIVATE(p, v)        16 floats at a private float pointer (any float alignment)
// LOADI16(p)                   16 ints at an int pointer
// LOAD16_INT(T, p)             16 T's (char, uchar, short) at p, as int16
// STORE16_BYTES(p, v)          the low bytes of int16 v, at a byte pointer
// LOAD_QUAD(p)                 4 bytes at a byte pointer (any alignment), as an int, byte 0 lowest
// PREFETCH(p)                  a hint that the 64-byte line at p is read soon
// CVT_F16 / CVT_I16 / CVT_UL16(v)  a 16-lane vector converted to float / int / ulong lanes (C's
//                              conversions: float to int truncates)
// AS_U16 / AS_I16 / AS_F16(v)  a 16-lane 32-bit vector's bits as uint / int / float lanes

#define VEC_CAT_(a, b) a##b
#define VEC_CAT(a, b) VEC_CAT_(a, b)

#ifdef TEFLON_CLANG_VECTORS
typedef int i16v __attribute__((ext_vector_type(16)));
typedef uint u16v __attribute__((ext_vector_type(16)));
typedef long l16v __attribute__((ext_vector_type(16)));
typedef long l8v __attribute__((ext_vector_type(8)));
typedef float f16v __attribute__((ext_vector_type(16)));
typedef float f16u __attribute__((ext_vector_type(16), aligned(4)));
typedef int int_16u __attribute__((ext_vector_type(16), aligned(4)));
typedef short short_16u __attribute__((ext_vector_type(16), aligned(2)));
typedef char char_16u __attribute__((ext_vector_type(16), aligned(1)));
typedef uchar uchar_16u __attribute__((ext_vector_type(16), aligned(1)));
typedef int int_u1 __attribute__((aligned(1)));
#define LOAD16(p) (*(const __global f16u*)(p))
#define STORE16(p, v) (*(__global f16u*)(p) = (v))
typedef float f8u __attribute__((ext_vector_type(8), aligned(4)));
#define LOAD8(p) (*(const __global f8u*)(p))
#define STORE8(p, v) (*(__global f8u*)(p) = (v))
#define STORE16_PRIVATE(p, v) (*(f16u*)(p) = (v))
#define LOADI16(p) (*(const __global int_16u*)(p))
#define LOAD16_INT(T, p) __builtin_convertvector(*(const __global VEC_CAT(T, _16u)*)(p), i16v)
#define STORE16_BYTES(p, v) (*(__global uchar_16u*)(p) = __builtin_convertvector((v), uchar16))
#define LOAD_QUAD(p) (*(const __global int_u1*)(p))
#define PREFETCH(p) __builtin_prefetch(p)
typedef ulong ul16v __attribute__((ext_vector_type(16)));
#define CVT_F16(v) __builtin_convertvector((v), f16v)
#define CVT_I16(v) __builtin_convertvector((v), i16v)
#define CVT_UL16(v) __builtin_convertvector((v), ul16v)
#define AS_U16(v) __builtin_astype((v), u16v)
#define AS_I16(v) __builtin_astype((v), i16v)
#define AS_F16(v) __builtin_astype((v), f16v)
#else
typedef int16 i16v;
typedef uint16 u16v;
typedef long16 l16v;
typedef long8 l8v;
typedef float16 f16v;
typedef float16 f16u;  // an unaligned vector is only ever a value: memory goes through vload16
#define LOAD16(p) vload16(0, (const __global float*)(p))
#define STORE16(p, v) vstore16((v), 0, (__global float*)(p))
typedef float8 f8u;
#define LOAD8(p) vload8(0, (const __global float*)(p))
#define STORE8(p, v) vstore8((v), 0, (__global float*)(p))
#define STORE16_PRIVATE(p, v) vstore16((v), 0, (float*)(p))
#define LOADI16(p) vload16(0, (const __global int*)(p))
#define LOAD16_INT(T, p) convert_int16(vload16(0, (const __global T*)(p)))
#define STORE16_BYTES(p, v) vstore16(convert_uchar16((v) & 0xFF), 0, (__global uchar*)(p))
#define LOAD_QUAD(p) as_int(vload4(0, (const __global uchar*)(p)))
#define PREFETCH(p)  // OpenCL's prefetch() is a hint too, and SIMD-lane devices gain nothing by it
typedef ulong16 ul16v;
#define CVT_F16(v) convert_float16(v)
#define CVT_I16(v) convert_int16(v)
#define CVT_UL16(v) convert_ulong16(v)
#define AS_U16(v) as_uint16(v)
#define AS_I16(v) as_int16(v)
#define AS_F16(v) as_float16(v)
#endif
