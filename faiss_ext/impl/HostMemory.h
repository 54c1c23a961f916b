// The host memory an allocation could have now (Linux: /proc/meminfo's MemAvailable),
// for GpuIndexBang's check before it builds an index whose vectors go to host memory.
#pragma once

#include <cstddef>
#include <string>

namespace faiss_ext {

/// MemAvailable of a /proc/meminfo text, in bytes; 0 when the line is missing.
size_t memAvailableBytes(const std::string& meminfo);

/// MemAvailable of this machine, or SIZE_MAX when it cannot be read (no check then).
size_t availableHostBytes();

} // namespace faiss_ext
