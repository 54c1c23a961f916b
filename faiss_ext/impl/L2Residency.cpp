#include <faiss_ext/impl/L2Residency.h>

#include <algorithm>

namespace faiss_ext {

size_t L2Residency::maxBytes(int device) {
    int setAside = 0, window = 0;
    if (cudaDeviceGetAttribute(&setAside, cudaDevAttrMaxPersistingL2CacheSize, device) !=
                cudaSuccess ||
        cudaDeviceGetAttribute(&window, cudaDevAttrMaxAccessPolicyWindowSize, device) !=
                cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return size_t(std::min(setAside, window));
}

L2Residency::L2Residency(int device, cudaStream_t stream, void* base, size_t bytes)
        : stream_(stream) {
    const size_t most = maxBytes(device);
    if (most == 0 || bytes == 0 || bytes > most) {
        return;
    }
    if (cudaDeviceGetLimit(&previousSetAside_, cudaLimitPersistingL2CacheSize) != cudaSuccess ||
        (previousSetAside_ < bytes &&
         cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, bytes) != cudaSuccess)) {
        cudaGetLastError(); // a device that refuses: run without the window
        return;
    }
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = base;
    attr.accessPolicyWindow.num_bytes = bytes;
    attr.accessPolicyWindow.hitRatio = 1.f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    if (cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr) !=
        cudaSuccess) {
        cudaGetLastError();
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, previousSetAside_);
        return;
    }
    active_ = true;
}

L2Residency::~L2Residency() {
    if (!active_) {
        return;
    }
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.num_bytes = 0;
    cudaStreamSetAttribute(stream_, cudaStreamAttributeAccessPolicyWindow, &attr);
    // Lines still marked persisting would keep the set-aside from other work.
    cudaStreamSynchronize(stream_);
    cudaCtxResetPersistingL2Cache();
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, previousSetAside_);
    cudaGetLastError();
}

} // namespace faiss_ext
