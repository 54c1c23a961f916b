// GpuResources as the module holds it: the C++ resources plus the lock that
// serialises the calls of every index built on them (the GIL is released during
// train/add/search, and GpuResources is not for concurrent use).
#pragma once

#include <mutex>

#include <pybind11/pybind11.h>

#include <faiss_ext/GpuIndex.h>
#include <faiss_ext/GpuResources.h>

namespace faiss_ext {
namespace python {

namespace py = pybind11;

class PyGpuResources : public GpuResources {
   public:
    using GpuResources::GpuResources;

    std::mutex& mutex() {
        return mutex_;
    }

   private:
    std::mutex mutex_;
};

/// The resources of an index created by this module (every index constructor and
/// loader of the module takes a PyGpuResources).
inline PyGpuResources& pyResources(const GpuIndex& index) {
    return static_cast<PyGpuResources&>(index.resources());
}

/// Releases the GIL, then takes the lock of the index's resources, for the duration
/// of one call into the device code. Member order releases the lock before the GIL
/// is taken back.
class DeviceCall {
   public:
    explicit DeviceCall(PyGpuResources& res) : lock_(res.mutex()) {}
    explicit DeviceCall(const GpuIndex& index) : DeviceCall(pyResources(index)) {}

   private:
    py::gil_scoped_release noGil_;
    std::lock_guard<std::mutex> lock_;
};

} // namespace python
} // namespace faiss_ext
