// BANG's PQ traversal distances (asymmetric: exact query, quantized base vectors) as
// plain functions compiled for both host and device, so that the tests' CPU reference
// forms every distance with the kernels' exact arithmetic and summation order.
//
// Per query a table of M x 256 entries: entry (m, c) is the squared L2 distance of the
// query's m-th subvector to centroid c of sub-quantizer m. The ADC distance of a
// vector with codes c_0..c_{M-1} is the sum over m of entry (m, c_m), summed by 8
// lanes (lane l takes m = l, l + 8, ...) whose partial sums are then added pairwise
// (lanes 4 apart, then 2, then 1), as the kernels' warp shuffles do.
#pragma once

#include <cmath>
#include <cstdint>

#include "BangBloom.h"

namespace faiss_ext {
namespace kernels {

/// Centroids per sub-quantizer (8-bit codes).
constexpr int kBangPqCentroids = 256;
/// Largest number of sub-quantizers M (the table is M KiB of shared memory).
constexpr int kBangMaxPqSubquantizers = 128;
/// Lanes summing one ADC distance.
constexpr int kBangPqLanes = 8;

/// Squared L2 distance of a query subvector to one centroid (dsub floats each).
FAISS_EXT_HD inline float bangPqTableEntry(const float* q, const float* centroid, int dsub) {
    float acc = 0.f;
    for (int j = 0; j < dsub; ++j) {
        const float t = q[j] - centroid[j];
        acc = fmaf(t, t, acc);
    }
    return acc;
}

/// Lane `lane`'s partial sum of the ADC distance of one code row (M bytes).
FAISS_EXT_HD inline float bangPqLaneSum(const float* table, const uint8_t* code, int M, int lane) {
    float acc = 0.f;
    for (int m = lane; m < M; m += kBangPqLanes) {
        acc += table[m * kBangPqCentroids + code[m]];
    }
    return acc;
}

/// The ADC distance of one code row, in the kernels' order (host side of the
/// kernels' shuffle reduction).
inline float bangPqDistance(const float* table, const uint8_t* code, int M) {
    float lanes[kBangPqLanes];
    for (int l = 0; l < kBangPqLanes; ++l) {
        lanes[l] = bangPqLaneSum(table, code, M, l);
    }
    for (int step = kBangPqLanes / 2; step >= 1; step /= 2) {
        for (int l = 0; l < step; ++l) {
            lanes[l] = lanes[l] + lanes[l + step];
        }
    }
    return lanes[0];
}

} // namespace kernels
} // namespace faiss_ext
