// Interop with the `faiss` Python module without sharing its binary: indexes move
// as FAISS's own serialized bytes (faiss.serialize_index / deserialize_index), read
// and written here with the C++ faiss::read_index / write_index.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <faiss/Index.h>

#include "resources.h"

namespace faiss_ext {
namespace python {

/// How one faiss_ext index type moves to and from its faiss CPU counterpart.
/// bind_<index>.cpp registers one; the functions run without the GIL.
struct CpuConverter {
    /// Python name of the faiss_ext class ("GpuIndexFlat").
    std::string gpuClass;
    /// Whether this converter loads the CPU index (its faiss type matches).
    std::function<bool(const faiss::Index&)> accepts;
    /// A new GPU index holding a copy of an accepted CPU index.
    std::function<std::unique_ptr<GpuIndex>(PyGpuResources&, const faiss::Index&)> fromCpu;
    /// A new CPU index copied from `index`, or null when `index` is not this
    /// converter's type.
    std::function<std::unique_ptr<faiss::Index>(const GpuIndex&)> toCpu;
};

void registerCpuConverter(CpuConverter converter);

/// Deserializes with faiss::read_index (FaissException on malformed data).
std::unique_ptr<faiss::Index> readFaissIndex(const std::vector<uint8_t>& bytes);

/// Serializes with faiss::write_index.
std::vector<uint8_t> writeFaissIndex(const faiss::Index& index);

/// The C++ class of a faiss index ("faiss::IndexHNSWFlat"), for messages.
std::string className(const faiss::Index& index);

} // namespace python
} // namespace faiss_ext
