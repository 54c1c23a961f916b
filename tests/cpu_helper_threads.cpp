// The helper threads of host work: every chunk of every job runs exactly once, whoever
// calls and however jobs follow each other.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <faiss_ext/impl/HelperThreads.h>

namespace {

using faiss_ext::runChunks;
using faiss_ext::wakeHelpers;

// Runs a job of `chunks` chunks that counts each chunk's runs; true when each ran once.
bool eachChunkOnce(int64_t chunks) {
    std::vector<std::atomic<int>> runs(static_cast<size_t>(chunks));
    for (auto& r : runs) {
        r.store(0);
    }
    runChunks(chunks, [&](int64_t c) { runs[size_t(c)].fetch_add(1); });
    for (auto& r : runs) {
        if (r.load() != 1) {
            return false;
        }
    }
    return true;
}

TEST(HelperThreads, EveryChunkRunsOnce) {
    for (int64_t chunks : {0, 1, 2, 3, 8, 9, 100, 5000}) {
        EXPECT_TRUE(eachChunkOnce(chunks)) << chunks << " chunks";
    }
}

TEST(HelperThreads, JobsBackToBackDoNotShareChunks) {
    // Helpers that wake late find a newer job: they must claim nothing of the old one.
    for (int job = 0; job < 20000; ++job) {
        ASSERT_TRUE(eachChunkOnce(2 + job % 5)) << "job " << job;
    }
}

TEST(HelperThreads, WokenAheadOfAJobOrForNone) {
    for (int job = 0; job < 2000; ++job) {
        wakeHelpers(); // helpers spin for the job that follows
        ASSERT_TRUE(eachChunkOnce(2 + job % 30)) << "job " << job;
    }
    wakeHelpers(); // no job follows: they spin out and sleep again
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_TRUE(eachChunkOnce(64));
}

TEST(HelperThreads, ConcurrentCallersEachRunTheirOwnChunks) {
    std::atomic<int> failures{0};
    std::vector<std::thread> callers;
    for (int t = 0; t < 4; ++t) {
        callers.emplace_back([&failures, t] {
            for (int job = 0; job < 500; ++job) {
                if (!eachChunkOnce(3 + (job + t) % 40)) {
                    failures.fetch_add(1);
                }
            }
        });
    }
    for (auto& c : callers) {
        c.join();
    }
    EXPECT_EQ(failures.load(), 0);
}

} // namespace
