// The host memory an allocation could have now (Linux: /proc/meminfo's MemAvailable),
// for GpuIndexBang's check before it builds an index whose vectors go to host memory;
// and this process's resident memory and its peak (/proc/self/status), for the tests and
// benchmarks that measure what a call holds on the host.
#pragma once

#include <cstddef>
#include <string>

namespace faiss_ext {

/// MemAvailable of a /proc/meminfo text, in bytes; 0 when the line is missing.
size_t memAvailableBytes(const std::string& meminfo);

/// MemAvailable of this machine, or SIZE_MAX when it cannot be read (no check then).
size_t availableHostBytes();

/// A field of /proc/self/status ("VmRSS": resident now, "VmHWM": the peak) in bytes; 0
/// when missing.
size_t processStatusBytes(const char* field);

/// Sets the peak resident memory (VmHWM) back to the resident memory now (Linux 4.0 on);
/// false when /proc/self/clear_refs cannot be written.
bool resetPeakResidentBytes();

} // namespace faiss_ext
