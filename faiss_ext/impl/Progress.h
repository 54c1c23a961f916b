// What an index prints about a long call when its `verbose` flag is set (as
// faiss::Index::verbose): each phase with the fraction of the call done and the time
// since the call began. Silent otherwise; the one place library code prints.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

namespace faiss_ext {

class Progress {
   public:
    /// `call` names the call in every line ("GpuIndexIVFFlat::add").
    Progress(bool enabled, std::string call);

    bool enabled() const {
        return enabled_;
    }
    /// The same call and clock for one part of it, [begin, end] of the whole: its
    /// fractions 0..1 are printed as begin..end (a stage reports its own progress
    /// without knowing what comes around it).
    Progress part(double begin, double end) const;

    /// One line on stdout: "<call>: <phase>, <percent> done, <seconds> s", the fraction
    /// (0..1) being of this part.
    void report(const std::string& phase, double fraction) const;
    /// report() once the work queued on `stream` has finished, so that the device's
    /// share of the phase shows in its time (waits for the stream only when printing).
    void reportAfter(cudaStream_t stream, const std::string& phase, double fraction) const;
    /// report("<phase> <done>/<total>", done / total).
    void step(const std::string& phase, int64_t done, int64_t total) const;

   private:
    bool enabled_;
    std::string call_;
    std::chrono::steady_clock::time_point start_;
    double begin_ = 0;
    double end_ = 1;
};

} // namespace faiss_ext
