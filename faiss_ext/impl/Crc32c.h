// CRC32C (Castagnoli, the checksum of iSCSI, ext4 and SSE4.2's crc32 instruction):
// the checksum of the sections of an index file (IndexImage.h). Our own table-driven
// one (slicing by 8, a few GB/s) rather than a library: the GPU machines build from
// carried packages without network access, and 40 lines cost less than a dependency.
#pragma once

#include <cstddef>
#include <cstdint>

namespace faiss_ext {

/// The CRC32C of `bytes` bytes at `data`, continuing `crc` (the CRC32C of what came
/// before; 0 to start): crc32c(b, m, crc32c(a, n)) is the CRC32C of a followed by b.
/// crc32c("123456789", 9) == 0xE3069283.
uint32_t crc32c(const void* data, size_t bytes, uint32_t crc = 0);

} // namespace faiss_ext
