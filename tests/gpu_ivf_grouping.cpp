// kernels::ivfGroupProbesByList, the list-major scan's grouping of a batch's (query,
// probe) pairs by list, on both of its paths (one block; the grid's counting sort)
// against a host reference: each list's start, its pairs (as a set: their order within
// a list is not fixed) and the start of its work items. Then where the list-major
// product keeps those starts.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/utils/DeviceBuffer.h>
#include <kernels/IvfListMajor.h>

#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

/// Work items of a list probed by `count` queries (kernels/IvfListMajor.h): groups of
/// the smallest multiple of 4 up to maxGroup that holds them, times tiles of 256 vectors.
int64_t hostListWork(int64_t count, int64_t length, int maxGroup) {
    const int64_t g = count <= maxGroup ? std::max<int64_t>(4, (count + 3) / 4 * 4) : maxGroup;
    return (count + g - 1) / g * ((length + 255) / 256);
}

struct GroupShape {
    int64_t nq;
    int nprobe;
    int64_t nlist;
};

void expectGroupsMatchHost(
        const GroupShape& shape,
        kernels::IvfGroupPath path,
        int maxGroup,
        std::mt19937_64& rng) {
    SCOPED_TRACE(
            testing::Message() << "nq " << shape.nq << " nprobe " << shape.nprobe << " nlist "
                               << shape.nlist << " path " << int(path) << " maxGroup " << maxGroup);
    GpuResources res;
    cudaStream_t stream = res.stream();
    const int64_t pairs = shape.nq * shape.nprobe;
    // Lengths: many empty lists, most short, one holding many tiles.
    std::vector<int64_t> lengths(static_cast<size_t>(shape.nlist));
    for (auto& len : lengths) {
        len = rng() % 4 == 0 ? 0 : int64_t(rng() % 700);
    }
    lengths[size_t(rng() % shape.nlist)] = 20000;
    // Probes: skewed towards the first lists (some probed by more than 16 queries), a
    // few missing (-1).
    std::vector<int64_t> coarse(static_cast<size_t>(pairs));
    for (auto& l : coarse) {
        const uint64_t r = rng() % 100;
        l = r < 3        ? -1
                : r < 40 ? int64_t(rng() % std::min<int64_t>(8, shape.nlist))
                         : int64_t(rng() % shape.nlist);
    }

    auto coarseDev = res.alloc<int64_t>(coarse.size());
    auto lengthsDev = res.alloc<int64_t>(lengths.size());
    copyToDevice(coarseDev.data(), coarse.data(), coarse.size(), stream);
    copyToDevice(lengthsDev.data(), lengths.data(), lengths.size(), stream);
    const size_t scratchBytes = kernels::ivfGroupScratchBytes(shape.nlist, pairs);
    auto scratch = res.alloc<char>(scratchBytes);
    // Garbage first: every value read back must have been written.
    ASSERT_EQ(cudaMemsetAsync(scratch.data(), 0x5a, scratchBytes, stream), cudaSuccess);
    const kernels::IvfProbeGroups g = kernels::ivfGroupProbesByList(
            coarseDev.data(), shape.nq, shape.nprobe, shape.nlist, lengthsDev.data(), maxGroup,
            scratch.data(), scratchBytes, stream, path);
    const auto listStart = copyToHostVector(g.listStart, size_t(shape.nlist + 1), stream);
    const auto workStart = copyToHostVector(g.workStart, size_t(shape.nlist + 1), stream);
    // The product takes its items from this counter, and its groups' size from here.
    EXPECT_EQ(copyToHostVector(g.nextItem, 1, stream)[0], 0);
    EXPECT_EQ(g.maxGroup, maxGroup);

    std::vector<std::vector<int>> expected(static_cast<size_t>(shape.nlist));
    for (int64_t i = 0; i < pairs; ++i) {
        if (coarse[size_t(i)] >= 0) {
            expected[size_t(coarse[size_t(i)])].push_back(int(i));
        }
    }
    int64_t start = 0, work = 0;
    for (int64_t l = 0; l <= shape.nlist; ++l) {
        ASSERT_EQ(listStart[size_t(l)], start) << "list " << l;
        ASSERT_EQ(workStart[size_t(l)], work) << "list " << l;
        if (l < shape.nlist) {
            const int64_t count = int64_t(expected[size_t(l)].size());
            start += count;
            work += hostListWork(count, lengths[size_t(l)], maxGroup);
        }
    }
    auto grouped = copyToHostVector(g.pairs, size_t(start), stream);
    for (int64_t l = 0; l < shape.nlist; ++l) {
        std::vector<int> got(
                grouped.begin() + listStart[size_t(l)], grouped.begin() + listStart[size_t(l + 1)]);
        std::sort(got.begin(), got.end());
        ASSERT_EQ(got, expected[size_t(l)]) << "list " << l;
    }
}

TEST(GpuIvfGrouping, BothPathsMatchTheHostGrouping) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    // A single query, a batch the auto choice gives one block, one above its pair limit,
    // and the most lists one block holds.
    for (const GroupShape shape :
         {GroupShape{1, 3, 50}, GroupShape{1024, 4, 4096}, GroupShape{3000, 8, 1000},
          GroupShape{200, 16, 5119}}) {
        for (const auto path :
             {kernels::IvfGroupPath::kAuto, kernels::IvfGroupPath::kOneBlock,
              kernels::IvfGroupPath::kKernels}) {
            for (const int maxGroup : {kernels::kIvfGroupMax, kernels::kIvfTensorKeysGroupMax}) {
                expectGroupsMatchHost(shape, path, maxGroup, rng);
            }
        }
    }
}

// Refused: the one-block path past the lists its shared memory holds, and group sizes
// that no product takes (kIvfGroupMax, or kIvfTensorKeysGroupMax for the tensor-core keys).
TEST(GpuIvfGrouping, RefusesWhatNoPathTakes) {
    FAISS_EXT_REQUIRE_GPU();
    GpuResources res;
    const int64_t nlist = 5120;
    auto coarse = res.alloc<int64_t>(1);
    auto lengths = res.alloc<int64_t>(size_t(nlist));
    const size_t scratchBytes = kernels::ivfGroupScratchBytes(nlist, 1);
    auto scratch = res.alloc<char>(scratchBytes);
    const auto group = [&](int maxGroup, kernels::IvfGroupPath path) {
        kernels::ivfGroupProbesByList(
                coarse.data(), 1, 1, nlist, lengths.data(), maxGroup, scratch.data(), scratchBytes,
                res.stream(), path);
    };
    EXPECT_THROW(
            group(kernels::kIvfGroupMax, kernels::IvfGroupPath::kOneBlock), faiss::FaissException);
    for (const int maxGroup : {0, 8, 24, 64}) {
        EXPECT_THROW(group(maxGroup, kernels::IvfGroupPath::kKernels), faiss::FaissException)
                << maxGroup;
    }
}

} // namespace
