#include <faiss_ext/impl/BangPq.h>

#include <algorithm>
#include <cstring>

#include <faiss/Clustering.h>
#include <faiss/impl/FaissAssert.h>
#include <faiss/impl/ProductQuantizer.h>

#include <faiss_ext/impl/KMeans.h>
#include <kernels/BangPq.h>

namespace faiss_ext {

void checkBangPqSubquantizers(int d, int M) {
    FAISS_THROW_IF_NOT_FMT(
            M >= 0 && M <= kernels::kBangMaxPqSubquantizers,
            "pqSubquantizers=%d is outside [0, %d] (0: exact distances)", M,
            kernels::kBangMaxPqSubquantizers);
    FAISS_THROW_IF_NOT_FMT(M == 0 || d % M == 0, "pqSubquantizers=%d does not divide d=%d", M, d);
}

std::vector<int64_t> bangPqTrainRows(int64_t n) {
    const int64_t s = std::min(n, kBangPqMaxTrainVectors);
    std::vector<int64_t> rows(size_t(std::max<int64_t>(s, 0)));
    for (int64_t i = 0; i < s; ++i) {
        rows[size_t(i)] = i * n / s; // i < 2^16, n < 2^31: no overflow
    }
    return rows;
}

namespace {

faiss::ProductQuantizer makePq(int d, int M) {
    faiss::ProductQuantizer pq(size_t(d), size_t(M), 8);
    pq.verbose = false;
    return pq;
}

} // namespace

std::vector<uint8_t> encodeBangPq(int64_t n, int d, int M, const float* centroids, const float* x) {
    faiss::ProductQuantizer pq = makePq(d, M);
    FAISS_ASSERT(pq.ksub == size_t(kernels::kBangPqCentroids));
    std::copy_n(centroids, pq.centroids.size(), pq.centroids.begin());
    std::vector<uint8_t> codes(size_t(n) * M);
    if (n > 0) {
        pq.compute_codes(x, codes.data(), size_t(n));
    }
    return codes;
}

BangPqTables trainBangPq(
        const GpuResources& res,
        int64_t n,
        int d,
        int M,
        const float* x,
        size_t pageBytes,
        const Progress& progress) {
    checkBangPqSubquantizers(d, M);
    FAISS_THROW_IF_NOT_FMT(
            M >= 1 && n >= kBangPqMinVectors,
            "PQ mode needs at least %lld vectors to train its 256-centroid codebooks (got "
            "%lld)",
            (long long)kBangPqMinVectors, (long long)n);
    const int dsub = d / M;
    const std::vector<int64_t> rows = bangPqTrainRows(n);
    const int64_t s = int64_t(rows.size());
    BangPqTables t;
    t.centroids.resize(size_t(M) * kernels::kBangPqCentroids * dsub);
    std::vector<float> slice(size_t(s) * dsub);
    faiss::ClusteringParameters cp;
    // The sample is at most 256 points per centroid already; fewer than faiss's 39 per
    // centroid is allowed (small indexes) without its warning.
    cp.min_points_per_centroid = 1;
    cp.max_points_per_centroid = int(kBangPqMaxTrainVectors / kernels::kBangPqCentroids);
    for (int m = 0; m < M; ++m) {
        for (int64_t i = 0; i < s; ++i) {
            std::memcpy(
                    slice.data() + size_t(i) * dsub,
                    x + size_t(rows[size_t(i)]) * d + size_t(m) * dsub,
                    size_t(dsub) * sizeof(float));
        }
        const std::vector<float> c = gpuKMeans(
                res, dsub, kernels::kBangPqCentroids, s, slice.data(), cp, faiss::METRIC_L2,
                pageBytes, Progress(false, ""));
        std::copy(
                c.begin(), c.end(),
                t.centroids.begin() + size_t(m) * kernels::kBangPqCentroids * dsub);
        progress.part(0, 0.9).step("PQ codebook", m + 1, M);
    }
    t.codes = encodeBangPq(n, d, M, t.centroids.data(), x);
    progress.report("PQ codes", 1.0);
    return t;
}

} // namespace faiss_ext
