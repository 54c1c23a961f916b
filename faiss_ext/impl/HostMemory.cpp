#include <faiss_ext/impl/HostMemory.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
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

size_t processStatusBytes(const char* field) {
    std::ifstream f("/proc/self/status");
    std::string line;
    const size_t n = std::strlen(field);
    while (std::getline(f, line)) {
        if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':') {
            return size_t(std::strtoull(line.c_str() + n + 1, nullptr, 10)) * 1024; // kB
        }
    }
    return 0;
}

bool resetPeakResidentBytes() {
    std::ofstream f("/proc/self/clear_refs");
    f << "5";
    f.close();
    return !f.fail();
}

} // namespace faiss_ext
