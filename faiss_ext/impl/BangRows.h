// GpuIndexBang's full vectors on the device with their squared norms: as floats, or as
// bytes where every component is an integer in [0, 255] (BangVectorStorage). Kernels read
// either (kernels/RowLoad.cuh) and compute the same values; what needs float rows (the
// GEMMs of the build's k-NN) converts a range at a time (toDeviceFloats).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <faiss/MetricType.h>

#include <faiss_ext/GpuResources.h>
#include <faiss_ext/IndexConfig.h>

namespace faiss_ext {

/// Rows [i0, i0 + n) of a BangRows (device memory, floats or bytes), as the build reads
/// them.
struct BangRowsView {
    const GpuResources* res = nullptr;
    int d = 0;
    int64_t n = 0;
    const float* floatRows = nullptr;  ///< n x d, when stored as floats
    const uint8_t* byteRows = nullptr; ///< n x d, when stored as bytes
    const float* rowNorms = nullptr;   ///< n

    int64_t size() const {
        return n;
    }
    int dim() const {
        return d;
    }
    bool isBytes() const {
        return byteRows != nullptr;
    }
    const float* floats() const {
        return floatRows;
    }
    const uint8_t* bytes() const {
        return byteRows;
    }
    const float* norms() const {
        return rowNorms;
    }
    /// Rows [i0, i0 + m) of the view as floats into device memory `out` (m x d).
    void toDeviceFloats(int64_t i0, int64_t m, float* out) const;
};

class BangRows {
   public:
    BangRows(const GpuResources& res, int d) : res_(&res), d_(d) {}

    /// n rows for assign: floats in host or device memory, or bytes in device memory
    /// (another BangRows's).
    struct Source {
        int64_t n = 0;
        const float* floats = nullptr;
        const uint8_t* bytes = nullptr;
    };

    /// Replaces the rows with those of `sources`, in order (BangRowsWriter). A failure
    /// leaves the rows as they were.
    void assign(const std::vector<Source>& sources, BangVectorStorage storage);
    void clear();

    int64_t size() const {
        return n_;
    }
    int dim() const {
        return d_;
    }
    bool isBytes() const {
        return bytes_.size() > 0;
    }
    /// The rows (size() x dim()) as floats, null when stored as bytes or empty.
    const float* floats() const {
        return floats_.data();
    }
    /// The rows as bytes, null when stored as floats or empty.
    const uint8_t* bytes() const {
        return bytes_.data();
    }
    /// Their squared norms (size()), as of the float rows.
    const float* norms() const {
        return norms_.data();
    }
    /// This storage as a source of assign (all rows).
    Source source() const {
        return {n_, floats(), bytes()};
    }
    /// Rows [i0, i0 + n), or all of them.
    BangRowsView view(int64_t i0, int64_t n) const;
    BangRowsView view() const {
        return view(0, n_);
    }
    /// Rows [i0, i0 + n) as floats into host memory `out`.
    void copyRowsToHost(int64_t i0, int64_t n, float* out) const;
    size_t deviceBytes() const {
        return floats_.bytes() + bytes_.bytes() + norms_.bytes();
    }

   private:
    friend class BangRowsWriter;

    const GpuResources* res_;
    int d_;
    int64_t n_ = 0;
    DeviceBuffer<float> floats_;  ///< n x d, when stored as floats
    DeviceBuffer<uint8_t> bytes_; ///< n x d, when stored as bytes
    DeviceBuffer<float> norms_;   ///< n
};

/// Fills new rows (total of them) a piece at a time, in order: as bytes while `storage`
/// allows (kBytes, or kAuto while every value so far is an integer in [0, 255]), else as
/// floats (kAuto switches at the first value that is not a byte, converting the rows
/// it has; kBytes throws). Float pieces pass through the device in chunks of 64 MiB.
class BangRowsWriter {
   public:
    BangRowsWriter(const GpuResources& res, int d, int64_t total, BangVectorStorage storage);
    /// The next n rows: floats in host or device memory, or bytes in device memory.
    void put(int64_t n, const float* x);
    void put(int64_t n, const uint8_t* bytes);
    /// The rows, once all total are in.
    BangRows finish();

   private:
    /// Stores rows [at_, at_ + m) from device floats.
    void putDeviceFloats_(int64_t m, const float* rows);
    /// Converts the rows stored so far to floats and stores floats from now on.
    void switchToFloats_();
    /// A device buffer of one chunk of float rows (allocated at the first use).
    float* stagingRows_();

    BangRows rows_;
    int64_t total_;
    BangVectorStorage storage_;
    int64_t at_ = 0;
    DeviceBuffer<int> notBytes_;
    DeviceBuffer<float> staging_;
};

/// Whether an index of this mode (pqM sub-quantizers, 0: exact) and metric can store its
/// vectors as bytes; kBytes elsewhere is refused by GpuIndexBang's constructor.
bool bangBytesApply(int pqM, faiss::MetricType metric);

} // namespace faiss_ext
