// GpuIndexFlat's payload: the vectors straight from and to the device, a piece at a time.
#include <faiss_ext/GpuIndexFlat.h>
#include <faiss_ext/impl/FlatStorage.h>
#include <faiss_ext/impl/IndexAccess.h>
#include <faiss_ext/impl/IndexFileIo.h>
#include <faiss_ext/impl/IndexImage.h>
#include <faiss_ext/impl/StreamedDeviceArrays.h>
#include <faiss_ext/utils/DeviceScope.h>

namespace faiss_ext {

void writeFlatIndex(ByteSink& out, const GpuIndexFlat& index) {
    FlatFields f;
    f.d = index.d;
    f.metric = int(index.metric_type);
    f.config = index.flatConfig();
    f.ntotal = index.ntotal;
    GpuResources& res = index.resources();
    DeviceScope scope(res.device());
    const FlatStorage& storage = GpuIndexFlatAccess::deviceState(index);
    writeFlatPayload(out, f, deviceArrayOut(res, storage.vectors(), f.ntotal, f.d));
}

std::unique_ptr<GpuIndex> readFlatIndex(ByteSource& in, uint32_t version, GpuResources& res) {
    const FlatFields f = readFlatFields(in, version);
    auto index = std::make_unique<GpuIndexFlat>(res, f.d, faiss::MetricType(f.metric), f.config);
    index->reserveMemory(size_t(f.ntotal));
    ArrayIn<float> vectors;
    vectors.put = [&](int64_t, int64_t n, const float* x) { index->add(n, x); };
    readFlatVectors(in, version, f, vectors);
    return index;
}

} // namespace faiss_ext
