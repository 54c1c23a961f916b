#include <faiss_ext/impl/KMeans.h>

#include <algorithm>

#include <faiss/Index.h>
#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/impl/FlatSearch.h>
#include <faiss_ext/impl/FlatStorage.h>
#include <faiss_ext/impl/HostPaging.h>

namespace faiss_ext {

namespace {

/// The assignment index faiss::Clustering asks for: the centroids on the device, each
/// search an exact flatSearch over them.
class DeviceAssigner : public faiss::Index {
   public:
    DeviceAssigner(
            const GpuResources& res,
            int d,
            faiss::MetricType metric,
            size_t pageBytes,
            const Progress& progress,
            int64_t iterations)
            : faiss::Index(d, metric),
              res_(res),
              pageBytes_(pageBytes),
              centroids_(res, d),
              progress_(progress),
              iterations_(iterations) {}

    void add(idx_t n, const float* x) override {
        centroids_.append(n, x);
        ntotal += n;
    }

    void reset() override {
        centroids_.clear();
        ntotal = 0;
    }

    void search(
            idx_t n,
            const float* x,
            idx_t k,
            float* distances,
            idx_t* labels,
            const faiss::SearchParameters*) const override {
        SearchArrays arrays;
        arrays.x = x;
        arrays.distances = distances;
        arrays.labels = labels;
        searchInPages(
                res_, n, d, k, pageBytes_, arrays,
                [&](int64_t m, const float* xDev, float* dDev, int64_t* iDev) {
                    FlatSearchInput in;
                    in.queries = xDev;
                    in.nq = m;
                    in.base = centroids_.vectors();
                    in.baseNorms = centroids_.norms();
                    in.nb = centroids_.size();
                    in.d = d;
                    in.metric = metric_type;
                    flatSearch(res_, in, int(k), dDev, iDev);
                });
        // faiss::Clustering assigns every training vector once per iteration.
        progress_.step("k-means iteration", ++searches_, iterations_);
    }

   private:
    const GpuResources& res_;
    size_t pageBytes_;
    FlatStorage centroids_;
    const Progress& progress_;
    int64_t iterations_;
    mutable int64_t searches_ = 0;
};

} // namespace

faiss::ClusteringParameters ivfKMeansParameters(faiss::MetricType metric) {
    faiss::ClusteringParameters cp;
    cp.niter = 10;
    cp.spherical = metric == faiss::METRIC_INNER_PRODUCT;
    return cp;
}

std::vector<float> gpuKMeans(
        const GpuResources& res,
        int d,
        int64_t k,
        int64_t n,
        const float* x,
        const faiss::ClusteringParameters& cp,
        faiss::MetricType metric,
        size_t pageBytes,
        const Progress& progress) {
    DeviceAssigner assigner(
            res, d, metric, pageBytes, progress, int64_t(cp.niter) * std::max(1, cp.nredo));
    faiss::Clustering clus(d, int(k), cp);
    clus.train(n, x, assigner);
    FAISS_ASSERT(clus.centroids.size() == size_t(k) * d);
    return std::move(clus.centroids);
}

} // namespace faiss_ext
