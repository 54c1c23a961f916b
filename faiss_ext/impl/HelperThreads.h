// Host work of a search cut into chunks, run by the calling thread and helper threads.
#pragma once

#include <cstdint>
#include <functional>

namespace faiss_ext {

/// Runs work(c) for every chunk c in [0, chunks) and returns once all have run. The
/// calling thread takes chunks itself, and so do up to 7 helper threads (fewer when
/// omp_get_max_threads() is lower) as they wake. After a job a helper spins up to 2 ms
/// for the next one, then sleeps; the caller waits only for chunks a helper has taken,
/// never for a helper that has not started: a helper the OS does not schedule costs its
/// share of the speed-up, not a stall. (OpenMP's teams spin ~3 ms after each region and
/// end at a barrier that waits for every thread of the team; in a busy process that cost
/// 2-8 ms a search: benchs/NOTES.md, twenty-fifth session.) A call made while another
/// thread's job runs does all of its own chunks. work must not throw; chunks must be
/// below 2^32.
void runChunks(int64_t chunks, const std::function<void(int64_t)>& work);

/// Wakes the helper threads to wait for the next job, spinning for up to 2 ms before
/// they sleep again: called before a wait (for the GPU) that a runChunks call follows,
/// so that their wake-up from sleep overlaps the wait instead of the work.
void wakeHelpers();

} // namespace faiss_ext
