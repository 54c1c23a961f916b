// A selection key turned into a FAISS distance on the device (Distances.h's finish), for
// finishKnn and for kernels that finish their own results.
#pragma once

#include <math_constants.h>
#include <cstdint>

#include "Distances.h"

namespace faiss_ext {
namespace kernels {

/// key of result id: L2 adds rowNorm and clamps at 0, inner product negates; a missing
/// result (id < 0) is +inf (L2) or -inf (inner product).
__device__ inline float finishedDistance(
        float key,
        int64_t id,
        DistanceFinish finish,
        float rowNorm) {
    if (finish == DistanceFinish::kL2) {
        return id < 0 ? CUDART_INF_F : fmaxf(key + rowNorm, 0.f);
    }
    return id < 0 ? -CUDART_INF_F : -key;
}

} // namespace kernels
} // namespace faiss_ext
