#include <faiss_ext/impl/HostMemory.h>

#include <cstdint>
#include <fstream>
#include <sstream>

namespace faiss_ext {

size_t memAvailableBytes(const std::string& meminfo) {
    std::istringstream in(meminfo);
    std::string key, unit;
    uint64_t value = 0;
    while (in >> key >> value) {
        std::getline(in, unit);
        if (key == "MemAvailable:") {
            return size_t(value) * 1024; // kB
        }
    }
    return 0;
}

size_t availableHostBytes() {
    std::ifstream file("/proc/meminfo");
    if (!file) {
        return SIZE_MAX;
    }
    std::stringstream text;
    text << file.rdbuf();
    const size_t bytes = memAvailableBytes(text.str());
    return bytes > 0 ? bytes : SIZE_MAX;
}

} // namespace faiss_ext
