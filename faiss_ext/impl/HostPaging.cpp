#include <faiss_ext/impl/HostPaging.h>

#include <faiss_ext/utils/CudaCheck.h>
#include <faiss_ext/utils/DeviceScope.h>

namespace faiss_ext {

int64_t searchPageQueries(int64_t n, int d, int64_t k, size_t pageBytes, const SearchArrays& a) {
    const size_t bytesPerQuery = (a.xOnDevice ? 0 : size_t(d) * sizeof(float)) +
            (a.distancesOnDevice ? 0 : size_t(k) * sizeof(float)) +
            (a.labelsOnDevice ? 0 : size_t(k) * sizeof(int64_t));
    if (bytesPerQuery == 0) {
        return n;
    }
    int64_t page = std::min<int64_t>(n, std::max<int64_t>(1, int64_t(pageBytes / bytesPerQuery)));
    const bool hostArrays = !a.xOnDevice && !a.distancesOnDevice && !a.labelsOnDevice;
    if (hostArrays && n >= 2 * kPipelineMinPageQueries) {
        const int64_t quarter = (n + kPipelinePages - 1) / kPipelinePages;
        page = std::min(page, std::max(kPipelineMinPageQueries, quarter));
    }
    return page;
}

PagePipeline::PagePipeline(const GpuResources& res) : search_(res.stream()) {
    DeviceScope scope(res.device());
    FAISS_EXT_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
    for (int s = 0; s < 2; ++s) {
        cudaError_t err = cudaEventCreateWithFlags(&queriesIn_[s], cudaEventDisableTiming);
        if (err == cudaSuccess) {
            err = cudaEventCreateWithFlags(&searched_[s], cudaEventDisableTiming);
        }
        if (err != cudaSuccess) {
            release();
            FAISS_EXT_CUDA_CHECK(err);
        }
    }
}

PagePipeline::~PagePipeline() {
    release();
}

void PagePipeline::release() {
    if (copy_ != nullptr) {
        cudaStreamSynchronize(copy_);
    }
    for (int s = 0; s < 2; ++s) {
        if (queriesIn_[s] != nullptr) {
            cudaEventDestroy(queriesIn_[s]);
            queriesIn_[s] = nullptr;
        }
        if (searched_[s] != nullptr) {
            cudaEventDestroy(searched_[s]);
            searched_[s] = nullptr;
        }
    }
    if (copy_ != nullptr) {
        cudaStreamDestroy(copy_);
        copy_ = nullptr;
    }
}

void PagePipeline::searchAfterQueriesIn(int slot) {
    FAISS_EXT_CUDA_CHECK(cudaEventRecord(queriesIn_[slot], copy_));
    FAISS_EXT_CUDA_CHECK(cudaStreamWaitEvent(search_, queriesIn_[slot], 0));
}

void PagePipeline::copyAfterSearch(int slot) {
    FAISS_EXT_CUDA_CHECK(cudaEventRecord(searched_[slot], search_));
    FAISS_EXT_CUDA_CHECK(cudaStreamWaitEvent(copy_, searched_[slot], 0));
}

} // namespace faiss_ext
