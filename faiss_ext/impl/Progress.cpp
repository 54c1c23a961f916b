#include <faiss_ext/impl/Progress.h>

#include <cstdio>
#include <utility>

#include <faiss_ext/utils/CudaCheck.h>

namespace faiss_ext {

Progress::Progress(bool enabled, std::string call)
        : enabled_(enabled), call_(std::move(call)), start_(std::chrono::steady_clock::now()) {}

Progress Progress::part(double begin, double end) const {
    Progress p = *this;
    p.begin_ = begin_ + (end_ - begin_) * begin;
    p.end_ = begin_ + (end_ - begin_) * end;
    return p;
}

void Progress::report(const std::string& phase, double fraction) const {
    if (!enabled_) {
        return;
    }
    const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double done = begin_ + (end_ - begin_) * fraction;
    std::printf(
            "%s: %s, %.1f%% done, %.3f s\n", call_.c_str(), phase.c_str(), 100.0 * done, seconds);
    std::fflush(stdout);
}

void Progress::reportAfter(cudaStream_t stream, const std::string& phase, double fraction) const {
    if (!enabled_) {
        return;
    }
    FAISS_EXT_CUDA_CHECK(cudaStreamSynchronize(stream));
    report(phase, fraction);
}

void Progress::step(const std::string& phase, int64_t done, int64_t total) const {
    if (!enabled_) {
        return;
    }
    report(phase + " " + std::to_string(done) + "/" + std::to_string(total),
           total > 0 ? double(done) / double(total) : 1.0);
}

} // namespace faiss_ext
