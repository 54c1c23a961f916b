// GpuIndexBang's PQ mode on the host: the config rule, the training sample, and the
// codebooks and codes (faiss::ProductQuantizer, 8 bits per code, k-means on the GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/impl/Progress.h>

namespace faiss_ext {

/// Most vectors the codebooks are trained on (faiss::Clustering's default sample for
/// 256 centroids: 256 per centroid).
constexpr int64_t kBangPqMaxTrainVectors = 65536;
/// Fewest vectors PQ mode can hold: one per centroid.
constexpr int64_t kBangPqMinVectors = 256;

/// Throws unless M = 0 (exact mode) or M in [1, kBangMaxPqSubquantizers] divides d.
void checkBangPqSubquantizers(int d, int M);

/// Rows of an n-vector set the codebooks are trained on: min(n, kBangPqMaxTrainVectors)
/// evenly spaced ones, ascending, starting at row 0.
std::vector<int64_t> bangPqTrainRows(int64_t n);

struct BangPqTables {
    std::vector<float> centroids; ///< M x 256 x d / M (faiss::ProductQuantizer's layout)
    std::vector<uint8_t> codes;   ///< n x M
};

/// Trains M codebooks of 256 centroids on bangPqTrainRows(n) of x (n x d, host, n >=
/// kBangPqMinVectors): per sub-quantizer gpuKMeans (KMeans.h, as GpuIndexIVFFlat::train;
/// host data paged through pageBytes); then encodes all n rows on the host
/// (faiss::ProductQuantizer::compute_codes). Deterministic for given inputs. Reports
/// each codebook and the codes to `progress`.
BangPqTables trainBangPq(
        const GpuResources& res,
        int64_t n,
        int d,
        int M,
        const float* x,
        size_t pageBytes,
        const Progress& progress);

/// Encodes n rows of x with given centroids (M x 256 x d / M).
std::vector<uint8_t> encodeBangPq(int64_t n, int d, int M, const float* centroids, const float* x);

} // namespace faiss_ext
