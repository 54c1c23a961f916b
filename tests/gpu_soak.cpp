// A bounded soak: worker threads mix add, add_with_ids, search, save / load, reset and
// copyTo (or reconstruct) on shared indexes, locking as a user must (each index with
// its own GpuResources behind its own mutex: a GpuResources is not for concurrent use
// from several threads, so the concurrency is between indexes sharing the device and
// its memory pool). Every answer is checked against a CPU reference of what the index
// must hold; at the end the device memory is back to its starting figure.
// FAISS_EXT_SOAK_SECONDS bounds the run (default 20, at most 600).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <cuda_runtime_api.h>
#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/GpuIndexBang.h>
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/index_io.h>

#include "Synthetic.h"
#include "TestUtil.h"

using namespace faiss_ext;
using namespace faiss_ext::test;

namespace {

constexpr int kDim = 16;
constexpr int64_t kNlist = 12;
/// Bang rebuilds its graph over all vectors on every add: reset past this size.
constexpr int64_t kBangCap = 3000;

int soakSeconds() {
    const char* env = std::getenv("FAISS_EXT_SOAK_SECONDS");
    const int s = env ? std::atoi(env) : 20;
    return std::min(std::max(s, 1), 600);
}

enum class Kind { kFlat, kIvf, kBang };

/// One shared index, what it must hold, and the lock a user takes around it.
struct Slot {
    Kind kind;
    faiss::MetricType metric;
    std::mutex mutex;
    std::unique_ptr<GpuResources> res;
    std::unique_ptr<GpuIndex> index;
    std::vector<float> x;        ///< the vectors it holds, in the order added
    std::vector<int64_t> ids;    ///< their ids
    std::vector<float> training; ///< IVF: the training set (kept through reset)
    int64_t nextId = 1000000;    ///< IVF add_with_ids: ids never used before
    int64_t found = 0;           ///< Bang: exact neighbours found, over the run
    int64_t expected = 0;        ///< Bang: exact neighbours there were to find

    int64_t size() const {
        return int64_t(ids.size());
    }
};

std::unique_ptr<GpuIndex> makeIndex(Slot& s) {
    if (s.kind == Kind::kFlat) {
        return std::make_unique<GpuIndexFlat>(*s.res, kDim, s.metric);
    }
    if (s.kind == Kind::kIvf) {
        auto ivf = std::make_unique<GpuIndexIVFFlat>(*s.res, kDim, kNlist, s.metric);
        ivf->nprobe = size_t(kNlist); // every list: exact answers
        ivf->train(int64_t(s.training.size()) / kDim, s.training.data());
        return ivf;
    }
    GpuIndexBangConfig c;
    c.build.graphDegree = 32;
    auto bang = std::make_unique<GpuIndexBang>(*s.res, kDim, s.metric, c);
    bang->search_L = 128; // kept by save / load
    return bang;
}

/// The exact k-NN of the queries over what the slot must hold (faiss CPU), with the
/// slot's ids.
void exactSearch(
        const Slot& s,
        int64_t nq,
        const float* xq,
        int k,
        std::vector<float>& D,
        std::vector<int64_t>& I) {
    faiss::IndexFlat flat(kDim, s.metric);
    if (s.size() > 0) {
        flat.add(s.size(), s.x.data());
    }
    D.assign(size_t(nq) * k, 0.f);
    I.assign(size_t(nq) * k, -1);
    flat.search(nq, xq, k, D.data(), I.data());
    for (int64_t& id : I) {
        id = id >= 0 ? s.ids[size_t(id)] : -1;
    }
}

/// Counts one failed check (with its message); the run stops after a few.
class Failures {
   public:
    void add(const std::string& what) {
        if (count_.fetch_add(1) < 10) {
            ADD_FAILURE() << what;
        }
    }
    bool many() const {
        return count_.load() >= 10;
    }

   private:
    std::atomic<int> count_{0};
};

/// Flat and IVF (every list probed) must give the exact answer; Bang a graph answer:
/// sorted, unique stored ids at their true distances (its recall is counted in the
/// slot and checked over the whole run).
void checkAnswer(
        Slot& s,
        int64_t nq,
        const std::vector<float>& xq,
        int k,
        const std::vector<float>& D,
        const std::vector<int64_t>& I,
        Failures& failures) {
    std::vector<float> refD;
    std::vector<int64_t> refI;
    exactSearch(s, nq, xq.data(), k, refD, refI);
    if (s.kind != Kind::kBang) {
        const int64_t bad = compareKnn(refD, refI, D, I, nq, k, 1e-4f, 1e-4f);
        if (bad > 0) {
            failures.add(std::to_string(bad) + " queries differ from the CPU reference");
        }
        return;
    }
    std::unordered_map<int64_t, int64_t> row; // id -> row of s.x
    for (int64_t i = 0; i < s.size(); ++i) {
        row[s.ids[i]] = i;
    }
    for (int64_t q = 0; q < nq; ++q) {
        std::vector<int64_t> seen;
        for (int j = 0; j < k; ++j) {
            const int64_t id = I[q * k + j];
            s.expected += refI[q * k + j] >= 0;
            if (id < 0) {
                continue;
            }
            auto it = row.find(id);
            if (it == row.end() || std::count(seen.begin(), seen.end(), id) > 0 ||
                (j > 0 && D[q * k + j] < D[q * k + j - 1])) {
                failures.add(
                        "Bang: query " + std::to_string(q) + " rank " + std::to_string(j) +
                        ": unknown, repeated or unsorted id " + std::to_string(id));
                return;
            }
            seen.push_back(id);
            float dist = 0.f;
            for (int t = 0; t < kDim; ++t) {
                const float diff = xq[q * kDim + t] - s.x[it->second * kDim + t];
                dist += diff * diff;
            }
            if (std::fabs(dist - D[q * k + j]) > 1e-4f * std::max(1.f, dist)) {
                failures.add(
                        "Bang: distance " + std::to_string(D[q * k + j]) + " for id " +
                        std::to_string(id) + ", true distance " + std::to_string(dist));
                return;
            }
            s.found += std::count(refI.begin() + q * k, refI.begin() + (q + 1) * k, id) > 0;
        }
    }
}

/// One random operation on one slot, under its lock.
void operate(Slot& s, std::mt19937_64& rng, Failures& failures) {
    std::lock_guard<std::mutex> lock(s.mutex);
    const int op = int(rng() % 100);
    if (op < 25) { // add
        if (s.kind == Kind::kBang && s.size() > kBangCap) {
            s.index->reset();
            s.x.clear();
            s.ids.clear();
        }
        const int64_t n = 1 + int64_t(rng() % (s.kind == Kind::kBang ? 600 : 2000));
        const std::vector<float> x = datasets::uniform(n, kDim, rng());
        s.index->add(n, x.data());
        s.x.insert(s.x.end(), x.begin(), x.end());
        for (int64_t i = 0; i < n; ++i) {
            s.ids.push_back(s.size());
        }
    } else if (op < 35) { // add_with_ids: IVF takes them, the others refuse them
        const int64_t n = 1 + int64_t(rng() % 500);
        const std::vector<float> x = datasets::uniform(n, kDim, rng());
        std::vector<int64_t> ids(static_cast<size_t>(n));
        for (int64_t& id : ids) {
            id = s.nextId++;
        }
        if (s.kind == Kind::kIvf) {
            s.index->add_with_ids(n, x.data(), ids.data());
            s.x.insert(s.x.end(), x.begin(), x.end());
            s.ids.insert(s.ids.end(), ids.begin(), ids.end());
        } else {
            const int64_t before = s.index->ntotal;
            try {
                s.index->add_with_ids(n, x.data(), ids.data());
                failures.add("add_with_ids was accepted by an index with sequential ids");
            } catch (const faiss::FaissException&) {
            }
            if (s.index->ntotal != before) {
                failures.add("a refused add_with_ids changed ntotal");
            }
        }
    } else if (op < 75) { // search
        if (s.size() == 0) {
            return;
        }
        const int64_t nq = 1 + int64_t(rng() % 100);
        const int k = 1 + int(rng() % (s.kind == Kind::kBang ? 32 : 100));
        const std::vector<float> xq = datasets::uniform(nq, kDim, rng());
        std::vector<float> D(size_t(nq) * k);
        std::vector<int64_t> I(size_t(nq) * k);
        s.index->search(nq, xq.data(), k, D.data(), I.data());
        checkAnswer(s, nq, xq, k, D, I, failures);
    } else if (op < 87) { // save / load: the loaded index answers the same, and stays
        const std::vector<uint8_t> bytes = serialize_index(s.index.get());
        std::unique_ptr<GpuIndex> loaded = deserialize_index(bytes.data(), bytes.size(), *s.res);
        if (loaded->ntotal != s.size()) {
            failures.add("a loaded index holds " + std::to_string(loaded->ntotal) + " vectors");
        }
        if (s.size() > 0) {
            const int64_t nq = 20;
            const int k = 10;
            const std::vector<float> xq = datasets::uniform(nq, kDim, rng());
            std::vector<float> D1(nq * k), D2(nq * k);
            std::vector<int64_t> I1(nq * k), I2(nq * k);
            s.index->search(nq, xq.data(), k, D1.data(), I1.data());
            loaded->search(nq, xq.data(), k, D2.data(), I2.data());
            if (D1 != D2 || I1 != I2) {
                failures.add("a loaded index answers differently from the saved one");
            }
        }
        if (auto ivf = dynamic_cast<GpuIndexIVFFlat*>(loaded.get())) {
            ivf->nprobe = size_t(kNlist);
        }
        s.index = std::move(loaded);
    } else if (op < 92) { // reset
        s.index->reset();
        s.x.clear();
        s.ids.clear();
    } else { // copyTo (Flat, IVF) or reconstruct (Bang): the CPU copy holds the data
        std::vector<float> back(s.x.size());
        if (s.kind == Kind::kFlat) {
            faiss::IndexFlat cpu(kDim, s.metric);
            static_cast<GpuIndexFlat&>(*s.index).copyTo(&cpu);
            if (cpu.ntotal > 0) {
                cpu.reconstruct_n(0, cpu.ntotal, back.data());
            }
        } else if (s.kind == Kind::kIvf) {
            faiss::IndexFlat q(kDim, s.metric);
            faiss::IndexIVFFlat cpu(&q, kDim, kNlist, s.metric);
            static_cast<GpuIndexIVFFlat&>(*s.index).copyTo(&cpu);
            cpu.set_direct_map_type(faiss::DirectMap::Hashtable); // ids are not 0..n-1
            for (int64_t i = 0; i < s.size(); ++i) {
                cpu.reconstruct(s.ids[i], back.data() + i * kDim);
            }
        } else if (s.size() > 0) {
            s.index->reconstruct_n(0, s.size(), back.data());
        }
        if (back != s.x) {
            failures.add("the copied vectors differ from the added ones");
        }
    }
}

/// Device memory in use: the stream-ordered pool's bytes in use, and the device's
/// free bytes once the pool has returned what it caches.
struct DeviceMemory {
    uint64_t poolUsed = 0;
    size_t freeBytes = 0;
};

DeviceMemory deviceMemory() {
    cudaMemPool_t pool;
    DeviceMemory m;
    size_t total = 0;
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
    EXPECT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
    EXPECT_EQ(
            cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &m.poolUsed), cudaSuccess);
    EXPECT_EQ(cudaMemGetInfo(&m.freeBytes, &total), cudaSuccess);
    return m;
}

/// The shared indexes: each kind, both metrics where the kind has them.
std::vector<std::unique_ptr<Slot>> makeSlots(uint64_t seed) {
    std::vector<std::unique_ptr<Slot>> slots;
    const std::pair<Kind, faiss::MetricType> setups[] = {
            {Kind::kFlat, faiss::METRIC_L2},
            {Kind::kFlat, faiss::METRIC_INNER_PRODUCT},
            {Kind::kIvf, faiss::METRIC_L2},
            {Kind::kIvf, faiss::METRIC_INNER_PRODUCT},
            {Kind::kBang, faiss::METRIC_L2}};
    for (const auto& setup : setups) {
        auto s = std::make_unique<Slot>();
        s->kind = setup.first;
        s->metric = setup.second;
        s->res = std::make_unique<GpuResources>();
        s->training = datasets::uniform(kNlist * 40, kDim, seed++);
        s->index = makeIndex(*s);
        slots.push_back(std::move(s));
    }
    return slots;
}

} // namespace

TEST(GpuSoak, ThreadsMixingEveryOperationGetCorrectAnswers) {
    FAISS_EXT_REQUIRE_GPU();
    const uint64_t seed = testSeed();
    {
        // Warm-up: loads the kernels and cuBLAS's, whose code the baseline then holds.
        std::vector<std::unique_ptr<Slot>> slots = makeSlots(seed);
        std::mt19937_64 rng(seed);
        Failures warm;
        for (auto& s : slots) {
            for (int i = 0; i < shapeCount(12, 4); ++i) {
                operate(*s, rng, warm);
            }
        }
    }
    const DeviceMemory before = deviceMemory();
    Failures failures;
    std::atomic<int64_t> operations{0};
    {
        std::vector<std::unique_ptr<Slot>> slots = makeSlots(seed + 100);
        const auto deadline =
                std::chrono::steady_clock::now() + std::chrono::seconds(soakSeconds());
        const int threads = 6;
        std::vector<std::thread> workers;
        for (int t = 0; t < threads; ++t) {
            workers.emplace_back([&, t] {
                std::mt19937_64 rng(seed + 1000 + t);
                while (std::chrono::steady_clock::now() < deadline && !failures.many()) {
                    Slot& s = *slots[rng() % slots.size()];
                    try {
                        operate(s, rng, failures);
                    } catch (const std::exception& e) {
                        failures.add(std::string("unexpected exception: ") + e.what());
                    }
                    ++operations;
                }
            });
        }
        for (std::thread& w : workers) {
            w.join();
        }
        for (const auto& s : slots) {
            if (s->kind == Kind::kBang) {
                std::printf(
                        "soak: Bang found %lld of %lld exact neighbours\n", (long long)s->found,
                        (long long)s->expected);
                EXPECT_GE(s->found, s->expected * 9 / 10);
            }
        }
    }
    std::printf("soak: %lld operations in %d s\n", (long long)operations.load(), soakSeconds());
    EXPECT_GT(operations.load(), 0);
    const DeviceMemory after = deviceMemory();
    EXPECT_EQ(after.poolUsed, before.poolUsed) << "device memory still held from the pool";
    // The device's free memory: allowing for cuBLAS kernels loaded on first use. Not
    // under compute-sanitizer, which runs other processes on the device at once.
    if (!underSanitizer()) {
        EXPECT_GE(after.freeBytes + (size_t(64) << 20), before.freeBytes)
                << "free device memory " << after.freeBytes << " after, " << before.freeBytes
                << " before";
    }
}
