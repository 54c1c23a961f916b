// Argument checks shared by every index. Plain C++ (no device): tested on any machine.
#pragma once

#include <cstdint>

namespace faiss_ext {

/// Largest k a search accepts.
constexpr int64_t kMaxSearchK = 2048;

/// n > 0 and x non-null, for train/add. `what` names the call in the message.
void checkVectorsArg(int64_t n, const float* x, const char* what);

/// n > 0, non-null pointers, 1 <= k <= kMaxSearchK.
void checkSearchArgs(
        int64_t n,
        const float* x,
        int64_t k,
        const float* distances,
        const int64_t* labels);

/// Every component finite (NaN or infinity in stored vectors would poison every
/// distance to them). The message names the first bad row.
void checkFinite(int64_t n, int d, const float* x, const char* what);

} // namespace faiss_ext
