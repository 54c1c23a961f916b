// main() of the GPU suites: runs them, and where there is no device reports the run
// as skipped to CTest (exit 77) instead of letting skipped tests look like passes.
#include <cstdio>

#include <gtest/gtest.h>

#include "TestUtil.h"

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    int rc = RUN_ALL_TESTS();
    if (rc == 0 && !faiss_ext::test::haveGpu()) {
        std::printf("no CUDA device: GPU tests were compiled but skipped\n");
        return 77;
    }
    return rc;
}
