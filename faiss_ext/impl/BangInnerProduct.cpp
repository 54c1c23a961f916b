#include <faiss_ext/impl/BangInnerProduct.h>

#include <algorithm>
#include <cmath>

namespace faiss_ext {

int bangStoredDim(int d, int M, faiss::MetricType metric) {
    if (metric != faiss::METRIC_INNER_PRODUCT) {
        return d;
    }
    return d + (M > 0 ? d / M : 1);
}

int bangStoredPqM(int M, faiss::MetricType metric) {
    return metric == faiss::METRIC_INNER_PRODUCT && M > 0 ? M + 1 : M;
}

double maxNormSq(const float* x, int64_t n, int d) {
    double best = 0;
    for (int64_t v = 0; v < n; ++v) {
        double s = 0;
        for (int j = 0; j < d; ++j) {
            s += double(x[size_t(v) * d + j]) * x[size_t(v) * d + j];
        }
        best = std::max(best, s);
    }
    return best;
}

std::vector<float> mipsRows(const float* x, int64_t n, int d, int width, double M2) {
    std::vector<float> out(size_t(n) * width, 0.f);
    for (int64_t v = 0; v < n; ++v) {
        double s = 0;
        for (int j = 0; j < d; ++j) {
            const float c = x[size_t(v) * d + j];
            out[size_t(v) * width + j] = c;
            s += double(c) * c;
        }
        out[size_t(v) * width + d] = float(std::sqrt(std::max(0.0, M2 - s)));
    }
    return out;
}

} // namespace faiss_ext
