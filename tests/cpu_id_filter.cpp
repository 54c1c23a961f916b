// The host side of filtered search: selector evaluation, fingerprints, the Bang cost
// model, and the tombstone section of the file format.
#include <cmath>
#include <vector>

#include <faiss/impl/IDSelector.h>
#include <gtest/gtest.h>

#include <faiss_ext/impl/BangFilteredSearch.h>
#include <faiss_ext/impl/ByteStream.h>
#include <faiss_ext/impl/IdFilter.h>
#include <faiss_ext/impl/IndexImage.h>

#include <kernels/BangSearch.h>

#include "FilterTestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

bool bit(const std::vector<uint32_t>& w, int64_t s) {
    return (w[size_t(s >> 5)] >> (s & 31)) & 1u;
}

TEST(IdFilter, HostEvaluationMatchesIsMember) {
    // Identity slots, and IVF-like slots: ids with -1 padding.
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < 300; ++i) {
        ids.push_back(i % 37 == 5 ? -1 : 7 * i + 2);
    }
    for (bool identity : {true, false}) {
        const int64_t n = identity ? 300 : int64_t(ids.size());
        for (const NamedSelector& s :
             selectorsOver(identity ? iota(n) : std::vector<int64_t>{2, 9, 16, 2000, 40, 100}, 3)) {
            SCOPED_TRACE(s.name + (identity ? " identity" : " ids"));
            const std::vector<uint32_t> w =
                    evaluateIdSelector(*s.sel, n, identity ? nullptr : ids.data());
            ASSERT_EQ(w.size(), size_t((n + 31) / 32));
            for (int64_t slot = 0; slot < n; ++slot) {
                const int64_t id = identity ? slot : ids[size_t(slot)];
                EXPECT_EQ(bit(w, slot), id >= 0 && s.sel->is_member(id)) << "slot " << slot;
            }
        }
    }
}

TEST(IdFilter, FingerprintFollowsContents) {
    std::vector<int64_t> a = {1, 2, 3}, b = {3, 2, 1}, c = {1, 2, 4};
    faiss::IDSelectorBatch ba(a.size(), a.data()), bb(b.size(), b.data()), bc(c.size(), c.data());
    EXPECT_EQ(idSelectorFingerprint(ba), idSelectorFingerprint(bb));
    EXPECT_NE(idSelectorFingerprint(ba), idSelectorFingerprint(bc));
    faiss::IDSelectorArray aa(a.size(), a.data());
    const uint64_t before = idSelectorFingerprint(aa);
    a[0] = 9; // the array's ids are read in place
    EXPECT_NE(idSelectorFingerprint(aa), before);
    faiss::IDSelectorRange r(0, 10);
    const uint64_t rb = idSelectorFingerprint(r);
    r.imax = 11;
    EXPECT_NE(idSelectorFingerprint(r), rb);
    faiss::IDSelectorNot notA(&ba), notC(&bc);
    EXPECT_NE(idSelectorFingerprint(notA), idSelectorFingerprint(notC));
    EXPECT_NE(idSelectorFingerprint(notA), idSelectorFingerprint(ba));
}

TEST(BangFilterPlan, ExactForFewAllowedGraphForMany) {
    const int64_t n = 1000000;
    const BangFilterPlan many = planBangFilteredSearch(n / 2, n, 64, 64, 10, 1024);
    EXPECT_FALSE(many.exact);
    EXPECT_GE(many.walkL, 64);
    EXPECT_LE(many.walkL, 4 * 64);
    const BangFilterPlan few = planBangFilteredSearch(n / 100, n, 64, 64, 10, 1024);
    EXPECT_TRUE(few.exact);
    // The widening grows as the selection shrinks, and stops at maxL.
    EXPECT_GT(planBangFilteredSearch(n / 10, n, 64, 64, 10, 1024).walkL, many.walkL);
    EXPECT_EQ(planBangFilteredSearch(n / 10, n, 512, 64, 10, 1024).walkL, 1024);
    // Fewer allowed nodes than the widened worklist could hold k of: exact.
    EXPECT_TRUE(planBangFilteredSearch(50, 1000, 16, 64, 10, 64).exact);
    EXPECT_THROW(planBangFilteredSearch(0, n, 64, 64, 10, 1024), faiss::FaissException);
}

TEST(BangFilterPlan, ExactUpToTheMeasuredCostRatio) {
    // The ratio measured on an H100 (SIFT 1M, bench_filtered): 8.5 (random ids) to 9.5
    // (ranges).
    EXPECT_GE(kBangExactSpeedup, 8.5);
    EXPECT_LE(kBangExactSpeedup, 9.5);
    // No room to widen (maxL = L): the walk costs 1.5 L R gathered distances a query, the
    // exact search allowed / kBangExactSpeedup, so exact wins up to kBangExactSpeedup x
    // 1.5 L R allowed nodes and the walk from one more. f x L stays above k on both sides.
    const int L = 64, R = 64, k = 10;
    const int64_t n = 100000;
    const int64_t edge = int64_t(std::floor(kBangExactSpeedup * 1.5 * L * R));
    ASSERT_GE(double(edge) / double(n) * L, double(k));
    EXPECT_TRUE(planBangFilteredSearch(edge, n, L, R, k, L).exact);
    const BangFilterPlan above = planBangFilteredSearch(edge + 1, n, L, R, k, L);
    EXPECT_FALSE(above.exact);
    EXPECT_EQ(above.walkL, L);
    // The same edge scales with R.
    const int64_t edge32 = int64_t(std::floor(kBangExactSpeedup * 1.5 * L * 32));
    EXPECT_TRUE(planBangFilteredSearch(edge32, n, L, 32, k, L).exact);
    EXPECT_FALSE(planBangFilteredSearch(edge32 + 1, n, L, 32, k, L).exact);
}

TEST(BangFilterPlan, OnDeviceBoundsTheWorklistBySharedMemory) {
    const int64_t n = 1000000;
    // Shared memory for any worklist: the plan of the widest one.
    const size_t unlimited = size_t(1) << 40;
    const BangFilterPlan wide =
            planBangFilteredSearchOnDevice(n / 10, n, 64, 10, 64, 128, 0, 1024, unlimited);
    const BangFilterPlan direct = planBangFilteredSearch(n / 10, n, 64, 64, 10, 1024);
    EXPECT_EQ(wide.exact, direct.exact);
    EXPECT_EQ(wide.walkL, direct.walkL);
    // Room for L = 64 only: no widening.
    const size_t justL = kernels::bangPersistentSmemBytes(64, 64, 128, 0, true);
    const BangFilterPlan narrow =
            planBangFilteredSearchOnDevice(n / 2, n, 64, 10, 64, 128, 0, 1024, justL);
    EXPECT_FALSE(narrow.exact);
    EXPECT_EQ(narrow.walkL, 64);
    // Not even L fits: exact.
    EXPECT_TRUE(
            planBangFilteredSearchOnDevice(n / 2, n, 64, 10, 64, 128, 0, 1024, justL - 1).exact);
}

BangImage smallBang() {
    BangImage im;
    im.d = 4;
    im.config.build.graphDegree = 2;
    im.ntotal = 5;
    im.vectors.assign(20, 1.f);
    im.graph = {1, -1, 0, 2, 1, 3, 2, 4, 3, -1};
    return im;
}

std::vector<uint8_t> bytesOf(const BangImage& im) {
    VectorSink out;
    writeHeader(out, IndexKind::kBang);
    writeBangImage(out, im);
    writeTrailer(out);
    return out.bytes;
}

BangImage parse(const std::vector<uint8_t>& bytes) {
    MemorySource in(bytes.data(), bytes.size());
    uint32_t version = 0;
    readHeader(in, &version);
    BangImage im = readBangImage(in, version);
    readTrailer(in);
    return im;
}

TEST(BangTombstones, SectionRoundTrips) {
    BangImage im = smallBang();
    const std::vector<uint8_t> plain = bytesOf(im);
    EXPECT_TRUE(parse(plain).tombstones.empty());
    im.tombstones = {1, 3};
    const std::vector<uint8_t> withTomb = bytesOf(im);
    EXPECT_EQ(withTomb.size(), plain.size() + 2 * 8);
    EXPECT_EQ(parse(withTomb).tombstones, im.tombstones);
}

TEST(BangTombstones, BadSectionsAreRefused) {
    for (std::vector<int64_t> bad : {std::vector<int64_t>{3, 1}, {5}, {-1}, {2, 2}}) {
        BangImage im = smallBang();
        im.tombstones = bad;
        const std::vector<uint8_t> bytes = bytesOf(im);
        EXPECT_THROW(parse(bytes), faiss::FaissException);
    }
}

} // namespace
