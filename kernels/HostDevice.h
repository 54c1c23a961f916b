// FAISS_EXT_HD: a function compiled for host and device under nvcc, for the host alone
// elsewhere, so that the CPU tests run the arithmetic the kernels run.
#pragma once

#ifdef __CUDACC__
#define FAISS_EXT_HD __host__ __device__
#else
#define FAISS_EXT_HD
#endif
