// The one mapping of a runtime k to the compile-time capacity of the register-resident
// warp selection (WarpSelect.cuh): nextPow2(k) in {1, 2, 4, 8, 16, 32}.
#pragma once

#include <type_traits>

#include <faiss/impl/FaissAssert.h>

#include <faiss_ext/utils/MathUtils.h>

#include "Select.h"

namespace faiss_ext {
namespace kernels {

/// Calls f(std::integral_constant<int, kp>()) with kp = nextPow2(k), for
/// 1 <= k <= kMaxWarpRegisterSelectK (the caller checks the range; outside it is a
/// broken invariant).
template <typename F>
void dispatchWarpSelectCapacity(int k, F&& f) {
    static_assert(kMaxWarpRegisterSelectK == 32, "one case per capacity below");
    switch (nextPow2(k)) {
        case 1:
            f(std::integral_constant<int, 1>());
            return;
        case 2:
            f(std::integral_constant<int, 2>());
            return;
        case 4:
            f(std::integral_constant<int, 4>());
            return;
        case 8:
            f(std::integral_constant<int, 8>());
            return;
        case 16:
            f(std::integral_constant<int, 16>());
            return;
        case 32:
            f(std::integral_constant<int, 32>());
            return;
        default:
            FAISS_ASSERT_FMT(false, "k=%d is outside the register warp selection", k);
    }
}

} // namespace kernels
} // namespace faiss_ext
