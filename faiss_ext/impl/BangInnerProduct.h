// GpuIndexBang's inner product on the host: the MIPS-to-L2 transform of the stored rows
// (kernels/BangInnerProduct.h has the queries' side) and the layout it gives the stored
// rows and, in PQ mode, their codes.
#pragma once

#include <cstdint>
#include <vector>

#include <faiss/MetricType.h>

namespace faiss_ext {

/// Width of a stored row of a d-dimensional GpuIndexBang with M PQ sub-quantizers (0:
/// exact mode): d for L2; for inner product d + 1, or in PQ mode d + d / M (the
/// transform's component and d / M - 1 zeros: one more sub-quantizer of the same width).
int bangStoredDim(int d, int M, faiss::MetricType metric);
/// Sub-quantizers of the stored rows: M for L2, M + 1 for inner product in PQ mode.
int bangStoredPqM(int M, faiss::MetricType metric);

/// The largest squared norm of n rows (host), in double.
double maxNormSq(const float* x, int64_t n, int d);

/// The transform of n rows x (n x d, host) into rows `width` wide: [x, sqrt(M2 -
/// |x|^2), 0, ...] (|x'|^2 = M2 for every x with |x|^2 <= M2).
std::vector<float> mipsRows(const float* x, int64_t n, int d, int width, double M2);

} // namespace faiss_ext
