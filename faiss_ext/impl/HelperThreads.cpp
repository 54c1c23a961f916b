#include <faiss_ext/impl/HelperThreads.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>

#include <omp.h>

namespace faiss_ext {

namespace {

using Work = std::function<void(int64_t)>;

/// The process's helper threads and the one job they may be working on. The job's next
/// chunk is claimed from one word holding (job number << 32 | chunk index), so a helper
/// that wakes late, after its job has ended, claims nothing of the next one.
class Helpers {
   public:
    static Helpers& instance() {
        // Never destroyed: its threads sleep on the condition variable until the process
        // ends, and no destructor runs while a search might still call in.
        static Helpers* helpers = new Helpers();
        return *helpers;
    }

    void run(int64_t chunks, const Work& work) {
        std::unique_lock<std::mutex> owner(ownerMutex_, std::try_to_lock);
        if (!owner.owns_lock() || chunks < 2) {
            for (int64_t c = 0; c < chunks; ++c) {
                work(c);
            }
            return;
        }
        std::call_once(started_, [this] { start_(); });
        uint32_t job;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            job = ++job_;
            work_ = &work;
            chunks_ = chunks;
            done_.store(0, std::memory_order_relaxed);
            next_.store(uint64_t(job) << 32, std::memory_order_release);
            posted_.store(job, std::memory_order_release);
        }
        wake_.notify_all();
        take_(job, chunks, work);
        // Only chunks already taken are outstanding: each is one short piece of work.
        while (done_.load(std::memory_order_acquire) < chunks) {
            std::this_thread::yield();
        }
    }

    void wake() {
        std::call_once(started_, [this] { start_(); });
        {
            std::lock_guard<std::mutex> lock(mutex_);
            ++wakes_;
        }
        wake_.notify_all();
    }

   private:
    Helpers() = default;

    void start_() {
        const int helpers = std::min(8, omp_get_max_threads()) - 1;
        for (int h = 0; h < helpers; ++h) {
            try {
                std::thread([this] { loop_(); }).detach();
            } catch (const std::system_error&) {
                break; // fewer helpers: the callers take more chunks themselves
            }
        }
    }

    /// Runs chunks of job `job` until none is left to claim (or another job has begun).
    void take_(uint32_t job, int64_t chunks, const Work& work) {
        uint64_t word = next_.load(std::memory_order_acquire);
        for (;;) {
            const int64_t c = int64_t(word & 0xffffffffu);
            if (uint32_t(word >> 32) != job || c >= chunks) {
                return;
            }
            if (next_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel)) {
                work(c);
                done_.fetch_add(1, std::memory_order_acq_rel);
                word = next_.load(std::memory_order_acquire);
            }
        }
    }

    void loop_() {
        uint32_t seen = 0;
        uint32_t seenWakes = 0;
        for (;;) {
            uint32_t job;
            const Work* work;
            int64_t chunks;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return job_ != seen || wakes_ != seenWakes; });
                seenWakes = wakes_;
                if (job_ == seen) {
                    // Woken ahead of a job: spin for it a while, then wait again.
                    lock.unlock();
                    spinWhileNoJob_(seen);
                    continue;
                }
                seen = job = job_;
                work = work_;
                chunks = chunks_;
            }
            // work stays valid while a chunk of `job` is unclaimed or running: its caller
            // waits for all of them.
            take_(job, chunks, *work);
            // Searches in a loop post their next copy one call later (a few hundred us
            // at batch 1024): a helper still spinning takes it at once, and the caller's
            // wake finds no sleeper to signal (signalling took the caller 6-8 us,
            // benchs/NOTES.md).
            spinWhileNoJob_(seen);
        }
    }

    /// Spins until a job other than `seen` is posted or kSpinForJob has passed.
    void spinWhileNoJob_(uint32_t seen) const {
        const auto until = std::chrono::steady_clock::now() + kSpinForJob;
        while (posted_.load(std::memory_order_acquire) == seen &&
               std::chrono::steady_clock::now() < until) {
        }
    }

    /// How long a helper spins for a job, after a wake or after its last job, before it
    /// sleeps: as OpenMP's runtimes spin before they block.
    static constexpr std::chrono::milliseconds kSpinForJob{2};

    std::mutex ownerMutex_; ///< held by the caller whose job runs
    std::once_flag started_;
    std::mutex mutex_; ///< guards job_, work_, chunks_ for the helpers
    std::condition_variable wake_;
    uint32_t job_ = 0;
    uint32_t wakes_ = 0; ///< wakeHelpers calls
    const Work* work_ = nullptr;
    int64_t chunks_ = 0;
    std::atomic<uint32_t> posted_{0}; ///< job_, read by spinning helpers without the lock
    std::atomic<uint64_t> next_{0};
    std::atomic<int64_t> done_{0};
};

} // namespace

void runChunks(int64_t chunks, const std::function<void(int64_t)>& work) {
    Helpers::instance().run(chunks, work);
}

void wakeHelpers() {
    Helpers::instance().wake();
}

} // namespace faiss_ext
