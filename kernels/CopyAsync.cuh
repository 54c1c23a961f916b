// Asynchronous global-to-shared copies (cp.async, sm_80 and up) and their groups. The
// copies and the wait clobber memory, so that the compiler neither moves a read of a
// slot above the wait that makes it valid nor a read of a slot below the copy that
// overwrites it.
#pragma once

namespace faiss_ext {
namespace kernels {

/// Copies 4 bytes to shared memory without waiting; valid false writes zero (src is
/// not read, but must be a mapped address).
__device__ __forceinline__ void copyAsync4(float* dst, const float* src, bool valid) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src),
                 "r"(valid ? 4 : 0)
                 : "memory");
}

/// Copies 16 bytes to shared memory address dst (as __cvta_generic_to_shared gives it)
/// without waiting (both addresses 16-byte aligned), bypassing L1. A caller that copies
/// to the same slots again and again keeps their shared address: made from a generic
/// pointer at each copy, it costs a few instructions where registers are short.
__device__ __forceinline__ void copyAsync16Shared(unsigned dst, const float4* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

/// copyAsync16Shared to a generic pointer into shared memory.
__device__ __forceinline__ void copyAsync16(float4* dst, const float4* src) {
    copyAsync16Shared(static_cast<unsigned>(__cvta_generic_to_shared(dst)), src);
}

/// Closes the group of the copies issued since the last commit (possibly none).
__device__ __forceinline__ void commitAsync() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/// Waits until at most `kPending` of this thread's committed groups, the newest, are
/// still in flight. The copies are then visible to this thread only: others need a
/// barrier after their own wait.
template <int kPending>
__device__ __forceinline__ void waitAsyncGroups() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

} // namespace kernels
} // namespace faiss_ext
