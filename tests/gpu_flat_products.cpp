// The GEMM products of the flat search (kernels/OperandSplit.h) against exact dot
// products: each stays within the error bound the threshold path's margin is built on
// (kernels::keyErrorBound), on data chosen to stress the splits and the tensor cores'
// accumulation; on cuBLAS and on the plain kernel (GpuResourcesConfig::plainProducts).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <faiss_ext/impl/FlatSearch.h>
#include <kernels/OperandSplit.h>
#include <kernels/ThresholdFilter.h>

#include "TestUtil.h"

using namespace faiss_ext;

namespace {

const char* productName(kernels::GemmProduct p) {
    switch (p) {
        case kernels::GemmProduct::kFloat32:
            return "fp32";
        case kernels::GemmProduct::kTF32:
            return "TF32";
        case kernels::GemmProduct::kTF32x3:
            return "3xTF32";
        case kernels::GemmProduct::kBF16x3:
            return "bf16x3";
    }
    return "?";
}

/// Rows of dimension d: uniform [0, 1); coordinates of magnitudes spread over six
/// decades with random signs; or a tight cluster far from the origin (every product
/// large and of one sign, the accumulation's worst case).
std::vector<float> makeRows(int64_t n, int d, int kind, std::mt19937_64& rng) {
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    std::vector<float> x(size_t(n) * d);
    std::vector<float> center(d);
    for (auto& c : center) {
        c = 100.f + unit(rng);
    }
    for (int64_t i = 0; i < n; ++i) {
        for (int j = 0; j < d; ++j) {
            float& v = x[size_t(i) * d + j];
            if (kind == 0) {
                v = unit(rng);
            } else if (kind == 1) {
                v = std::pow(10.f, 6.f * unit(rng) - 3.f) * (unit(rng) < 0.5f ? -1.f : 1.f);
            } else {
                v = center[j] + 1e-3f * unit(rng);
            }
        }
    }
    return x;
}

/// The split of x[i] as the kernels define it (OperandSplit.h), as raw bits: TF32 rounds
/// to nearest with ties away from zero and keeps the remainder as it is (exact in FP32),
/// bf16 rounds to nearest even, the remainder too. Row layout [big, big, small] (query) or [big,
/// small, big] (base).
template <typename Bits>
std::vector<Bits> hostSplit(const std::vector<float>& x, int64_t n, int d, bool bf16, bool query) {
    auto bitsOf = [](float v) {
        uint32_t u;
        std::memcpy(&u, &v, sizeof(u));
        return u;
    };
    auto floatOf = [](uint32_t u) {
        float v;
        std::memcpy(&v, &u, sizeof(v));
        return v;
    };
    // Returns the rounded value's bits (bf16: the high 16 bits).
    auto round = [&](float v) -> uint32_t {
        const uint32_t u = bitsOf(v);
        return bf16 ? (u + 0x7fffu + ((u >> 16) & 1u)) >> 16 : (u + 0x1000u) & 0xffffe000u;
    };
    auto widen = [&](uint32_t r) { return floatOf(bf16 ? r << 16 : r); };
    std::vector<Bits> out(size_t(n) * 3 * d);
    for (int64_t i = 0; i < n; ++i) {
        for (int j = 0; j < d; ++j) {
            const float v = x[size_t(i) * d + j];
            const uint32_t big = round(v);
            const float rest = v - widen(big);
            const uint32_t small = bf16 ? round(rest) : bitsOf(rest);
            Bits* o = out.data() + size_t(i) * 3 * d + j;
            o[0] = Bits(big);
            o[d] = Bits(query ? big : small);
            o[2 * d] = Bits(query ? small : big);
        }
    }
    return out;
}

} // namespace

class GpuFlatProducts : public ::testing::TestWithParam<bool> {};

TEST_P(GpuFlatProducts, EveryProductStaysWithinItsKeyErrorBound) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResourcesConfig config;
    config.plainProducts = GetParam();
    GpuResources res(config);
    cudaStream_t stream = res.stream();
    std::mt19937_64 rng(test::testSeed());
    // Under compute-sanitizer, where each of the products' loads is checked: a full and
    // a partial group of the plain kernel's 8 queries a thread, a full and a partial
    // block of its 128 base rows, and the dimensions but 768.
    const int64_t nq = test::smallUnderSanitizer(48, 9), nb = test::smallUnderSanitizer(400, 130);
    const std::vector<int> dims = test::underSanitizer() ? std::vector<int>{1, 7, 128, 2048}
                                                         : std::vector<int>{1, 7, 128, 768, 2048};
    for (int d : dims) {
        for (int kind : {0, 1, 2}) {
            const auto xq = makeRows(nq, d, kind, rng);
            const auto xb = makeRows(nb, d, kind, rng);
            auto q = res.alloc<float>(xq.size());
            auto b = res.alloc<float>(xb.size());
            copyToDevice(q.data(), xq.data(), xq.size(), stream);
            copyToDevice(b.data(), xb.data(), xb.size(), stream);
            for (kernels::GemmProduct product :
                 {kernels::GemmProduct::kFloat32, kernels::GemmProduct::kTF32,
                  kernels::GemmProduct::kTF32x3, kernels::GemmProduct::kBF16x3}) {
                SCOPED_TRACE(
                        std::string(productName(product)) + " d=" + std::to_string(d) +
                        " kind=" + std::to_string(kind));
                const size_t splitRow = kernels::splitRowBytes(product, d);
                auto qs = res.alloc<char>(nq * splitRow);
                auto bs = res.alloc<char>(nb * splitRow);
                const void* qOp = q.data();
                const void* bOp = b.data();
                if (splitRow > 0) {
                    kernels::splitRows(
                            product, q.data(), nq, d, kernels::SplitRole::kQuery, qs.data(),
                            stream);
                    kernels::splitRows(
                            product, b.data(), nb, d, kernels::SplitRole::kBase, bs.data(), stream);
                    qOp = qs.data();
                    bOp = bs.data();
                }
                auto dist = res.alloc<float>(size_t(nq) * nb);
                // Inner product: dist = -Q B^T.
                flatProductTile(
                        res, faiss::METRIC_INNER_PRODUCT, qOp, nq, bOp, nb, d, product,
                        dist.data());
                const auto got = copyToHostVector(dist.data(), dist.size(), stream);
                const double rel = kernels::keyErrorBound(d, product).dotRel;
                double worst = 0; // largest error / bound seen
                for (int64_t i = 0; i < nq; ++i) {
                    for (int64_t j = 0; j < nb; ++j) {
                        double dot = 0, qq = 0, bb = 0;
                        for (int c = 0; c < d; ++c) {
                            const double a = xq[size_t(i) * d + c], e = xb[size_t(j) * d + c];
                            dot += a * e;
                            qq += a * a;
                            bb += e * e;
                        }
                        const double err = std::abs(-double(got[size_t(i) * nb + j]) - dot);
                        worst = std::max(worst, err / (rel * std::sqrt(qq * bb)));
                    }
                }
                EXPECT_LE(worst, 1.0);
            }
        }
    }
}

// The split kernel's vector path (d a multiple of 4, aligned rows) and its scalar path
// (other d, or rows starting off a 16-byte boundary) write exactly the host's split.
TEST(GpuOperandSplit, SplitRowsMatchTheHostSplitBitForBit) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    cudaStream_t stream = res.stream();
    std::mt19937_64 rng(test::testSeed());
    const int64_t n = 37;
    for (int d : {1, 6, 7, 128, 768}) {
        for (int kind : {0, 1, 2}) {
            const auto x = makeRows(n + 1, d, kind, rng);
            auto xDev = res.alloc<float>(x.size());
            copyToDevice(xDev.data(), x.data(), x.size(), stream);
            for (int64_t skip : {0, 1}) { // skip 1 float: rows off the vector alignment
                const std::vector<float> rows(x.begin() + skip, x.begin() + skip + n * d);
                for (bool bf16 : {false, true}) {
                    for (bool query : {false, true}) {
                        SCOPED_TRACE(
                                std::string(bf16 ? "bf16x3" : "3xTF32") +
                                " d=" + std::to_string(d) + " kind=" + std::to_string(kind) +
                                " skip=" + std::to_string(skip) + (query ? " query" : " base"));
                        const auto product = bf16 ? kernels::GemmProduct::kBF16x3
                                                  : kernels::GemmProduct::kTF32x3;
                        auto out = res.alloc<char>(n * kernels::splitRowBytes(product, d));
                        kernels::splitRows(
                                product, xDev.data() + skip, n, d,
                                query ? kernels::SplitRole::kQuery : kernels::SplitRole::kBase,
                                out.data(), stream);
                        if (bf16) {
                            const auto got = copyToHostVector(
                                    reinterpret_cast<const uint16_t*>(out.data()),
                                    size_t(n) * 3 * d, stream);
                            EXPECT_EQ(got, hostSplit<uint16_t>(rows, n, d, true, query));
                        } else {
                            const auto got = copyToHostVector(
                                    reinterpret_cast<const uint32_t*>(out.data()),
                                    size_t(n) * 3 * d, stream);
                            EXPECT_EQ(got, hostSplit<uint32_t>(rows, n, d, false, query));
                        }
                    }
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
        CublasAndPlain,
        GpuFlatProducts,
        ::testing::Bool(),
        [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Plain" : "Cublas"; });
