// FAISS's IVFFlat tutorial with faiss_ext::GpuIndexIVFFlat in place of
// faiss::IndexIVFFlat: the same train / add / search calls, results in the same
// layout. Exits 2 without a CUDA device, 1 if the search finds the wrong neighbours.
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include <faiss_ext/GpuIndexIVFFlat.h>
#include <faiss_ext/GpuResources.h>

int main() {
    const int d = 64;      // dimension
    const int nb = 100000; // database size
    const int nq = 1000;   // number of queries
    const int nlist = 100; // inverted lists
    const int k = 4;       // neighbours per query

    if (faiss_ext::GpuResources::deviceCount() == 0) {
        std::fprintf(stderr, "ivf_flat_example: no CUDA device found; faiss_ext needs one\n");
        return 2;
    }

    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> uniform;
    std::vector<float> xb(size_t(nb) * d), xq(size_t(nq) * d);
    for (int i = 0; i < nb; i++) {
        for (int j = 0; j < d; j++) {
            xb[size_t(i) * d + j] = uniform(rng);
        }
        xb[size_t(i) * d] += i / 1000.f;
    }
    for (int i = 0; i < nq; i++) {
        // Each query is a database vector (id 10 * i) moved a little.
        for (int j = 0; j < d; j++) {
            xq[size_t(i) * d + j] = xb[size_t(10 * i) * d + j] + 1e-3f * uniform(rng);
        }
    }

    faiss_ext::GpuResources res;
    // faiss::IndexFlatL2 quantizer(d); faiss::IndexIVFFlat index(&quantizer, d, nlist);
    faiss_ext::GpuIndexIVFFlat index(res, d, nlist, faiss::METRIC_L2);
    index.verbose = true;
    index.train(nb, xb.data());
    index.add(nb, xb.data());

    std::vector<float> D(size_t(nq) * k);
    std::vector<int64_t> I(size_t(nq) * k);
    index.nprobe = 10;
    index.search(nq, xq.data(), k, D.data(), I.data());

    int found = 0;
    for (int i = 0; i < nq; i++) {
        found += I[size_t(i) * k] == 10 * i;
    }
    std::printf("I (first 3 queries):\n");
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < k; j++) {
            std::printf("%7lld ", (long long)I[size_t(i) * k + j]);
        }
        std::printf("\n");
    }
    std::printf("%d of %d queries found their source vector first\n", found, nq);
    return found >= nq * 9 / 10 ? 0 : 1;
}
