// The OpenMP team of a search call's host work.
#pragma once

#include <algorithm>

#include <omp.h>

namespace faiss_ext {

/// Threads that every parallel region of a search asks for (the copies through the pinned
/// staging, the queries' finiteness check). libgomp ends the pool threads a smaller team
/// leaves out and starts new ones for the next larger team: a 4-thread copy in and an
/// 8-thread copy out cost a thread start each call, 110-140 us of a 0.42 ms search
/// (benchs/NOTES.md, twenty-fifth session). One size keeps the pool's threads alive.
inline int searchTeamThreads() {
    return std::min(8, omp_get_max_threads());
}

} // namespace faiss_ext
