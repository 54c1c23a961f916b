// Sharded and replicated indexes: what is refused before any device is touched.
#include <memory>

#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/impl/FaissAssert.h>
#include <gtest/gtest.h>

#include <faiss_ext/gpu_multiple.h>

using namespace faiss_ext;

TEST(GpuParts, ConfigNamesTheBadDevice) {
    GpuPartsConfig parts;
    EXPECT_THROW(checkPartsConfig(parts, 2), faiss::FaissException); // no devices
    parts.devices = {0, 1, 1, 0};
    EXPECT_NO_THROW(checkPartsConfig(parts, 2));
    parts.devices = {0, -1};
    EXPECT_THROW(checkPartsConfig(parts, 2), faiss::FaissException);
    parts.devices = {0, 2};
    try {
        checkPartsConfig(parts, 2);
        ADD_FAILURE() << "device 2 of 2 accepted";
    } catch (const faiss::FaissException& e) {
        EXPECT_NE(std::string(e.what()).find("part 1 on CUDA device 2"), std::string::npos)
                << e.what();
    }
}

TEST(GpuParts, WrappersRefuseAnEmptyDeviceList) {
    GpuPartsConfig parts;
    EXPECT_THROW(GpuIndexShards(parts, flatParts(8)), faiss::FaissException);
    EXPECT_THROW(GpuIndexReplicas(parts, flatParts(8)), faiss::FaissException);
}

TEST(GpuParts, CopiesRefuseOtherCpuIndexesBeforeTouchingADevice) {
    GpuPartsConfig parts;
    parts.devices = {0};
    faiss::IndexHNSWFlat hnsw(8, 16);
    EXPECT_THROW(index_cpu_to_gpu_shards(&hnsw, parts), faiss::FaissException);
    EXPECT_THROW(index_cpu_to_gpu_replicas(&hnsw, parts), faiss::FaissException);
    EXPECT_THROW(index_cpu_to_gpu_shards(nullptr, parts), faiss::FaissException);
    faiss::IndexFlatL2 quantizer(8);
    faiss::IndexIVFFlat untrained(&quantizer, 8, 4);
    EXPECT_THROW(index_cpu_to_gpu_shards(&untrained, parts), faiss::FaissException);
    EXPECT_THROW(index_cpu_to_gpu_replicas(&untrained, parts), faiss::FaissException);
}
