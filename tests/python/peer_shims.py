"""CPU stand-ins for the GPU peers of benchs/compare_peers.py, so that its adapters and
its whole run are exercised without a GPU. Each mirrors the signatures the harness
calls (FAISS GPU, faiss_ext, cuVS + CuPy) and does the work with faiss CPU or numpy;
they say nothing about speed."""

from types import SimpleNamespace

import numpy as np


def faiss_gpu(faiss):
    """The FAISS GPU names the harness uses, over faiss CPU."""

    class GpuIndexFlatL2(faiss.IndexFlatL2):
        def __init__(self, res, d):
            super().__init__(d)

    class GpuIndexFlatIP(faiss.IndexFlatIP):
        def __init__(self, res, d):
            super().__init__(d)

    class GpuIndexIVFFlat:
        def __init__(self, cpu):
            self.cpu = faiss.clone_index(cpu)

        nlist = property(lambda self: self.cpu.nlist)
        nprobe = property(lambda self: self.cpu.nprobe,
                          lambda self, v: setattr(self.cpu, "nprobe", v))

        def add(self, x):
            self.cpu.add(x)

        def search(self, x, k):
            return self.cpu.search(x, k)

        def getListLength(self, i):
            return self.cpu.invlists.list_size(i)

    def index_cpu_to_gpu(res, device, index):
        assert device == 0
        return GpuIndexIVFFlat(index)

    ns = SimpleNamespace(
        __version__=faiss.__version__ + " (CPU stand-in)", __file__="shim",
        StandardGpuResources=lambda: object(), get_num_gpus=lambda: 1,
        GpuIndexFlatL2=GpuIndexFlatL2, GpuIndexFlatIP=GpuIndexFlatIP,
        index_cpu_to_gpu=index_cpu_to_gpu)
    for name in ("IndexFlatL2", "IndexFlatIP", "IndexIVFFlat", "IndexHNSWFlat",
                 "METRIC_L2", "METRIC_INNER_PRODUCT", "omp_get_max_threads"):
        setattr(ns, name, getattr(faiss, name))
    return ns


def faiss_ext(faiss):
    """The faiss_ext names the harness uses (see faiss_ext/python/bind_*.cpp); selectors
    and per-call parameters as the module's (sel filters the results), done by faiss CPU."""
    METRIC_L2, METRIC_INNER_PRODUCT = 1, 0

    class IDSelectorRange:
        def __init__(self, imin, imax):
            self.imin, self.imax = imin, imax
            self.faiss = faiss.IDSelectorRange(imin, imax)

    class IDSelectorBitmap:
        def __init__(self, bitmap):
            bitmap = np.asarray(bitmap)
            assert bitmap.dtype == np.uint8 and bitmap.ndim == 1   # as the module checks
            self.bytes = bitmap.copy()                             # the module copies
            self.faiss = faiss.IDSelectorBitmap(self.bytes)

    class SearchParameters:
        def __init__(self, sel=None):
            self.sel = sel

    class SearchParametersIVF(SearchParameters):
        def __init__(self, nprobe=1, sel=None):
            super().__init__(sel)
            self.nprobe = nprobe

    class _Wrapped:
        def add(self, x):
            self.cpu.add(x)

        def search(self, x, k, params=None):
            if params is None or params.sel is None:
                return self.cpu.search(x, k)
            assert type(params) is SearchParameters, type(params)
            return self.cpu.search(x, k, params=faiss.SearchParameters(sel=params.sel.faiss))

        def device_memory_bytes(self):
            return self.cpu.ntotal * self.cpu.d * 4

    class GpuIndexFlat(_Wrapped):
        def __init__(self, res, d, metric=METRIC_L2):
            self.cpu = faiss.IndexFlatL2(d) if metric == METRIC_L2 else faiss.IndexFlatIP(d)

    class GpuIndexIVFFlat(_Wrapped):
        def __init__(self, res, d, nlist, metric=METRIC_L2, cpu=None):
            if cpu is None:
                q = faiss.IndexFlatL2(d) if metric == METRIC_L2 else faiss.IndexFlatIP(d)
                m = faiss.METRIC_L2 if metric == METRIC_L2 else faiss.METRIC_INNER_PRODUCT
                cpu = faiss.IndexIVFFlat(q, d, nlist, m)
            self.cpu = cpu

        nlist = property(lambda self: self.cpu.nlist)
        nprobe = property(lambda self: self.cpu.nprobe,
                          lambda self, v: setattr(self.cpu, "nprobe", v))

        def train(self, x):
            self.cpu.train(x)

        def list_length(self, i):
            return self.cpu.invlists.list_size(i)

        def search(self, x, k, params=None):
            if params is None or params.sel is None:
                return self.cpu.search(x, k)
            assert isinstance(params, SearchParametersIVF)
            p = faiss.SearchParametersIVF(sel=params.sel.faiss, nprobe=params.nprobe)
            return self.cpu.search(x, k, params=p)

    class SearchParametersBang(SearchParameters):
        def __init__(self, search_L=64, sel=None, entry="nearest_hub"):
            super().__init__(sel)
            self.search_L = search_L
            self.entry = entry

    class GpuIndexBang(_Wrapped):
        def __init__(self, res, d, R=64, metric=METRIC_L2):
            m = faiss.METRIC_L2 if metric == METRIC_L2 else faiss.METRIC_INNER_PRODUCT
            self.cpu = faiss.IndexHNSWFlat(d, 16, m)
            self.search_L = 64

        def search(self, x, k, params=None):
            ef = max(k, params.search_L if params else self.search_L)
            if params is None or params.sel is None:
                self.cpu.hnsw.efSearch = ef
                return self.cpu.search(x, k)
            p = faiss.SearchParametersHNSW(sel=params.sel.faiss, efSearch=ef)
            return self.cpu.search(x, k, params=p)

    def index_cpu_to_gpu(res, index):
        return GpuIndexIVFFlat(res, index.d, index.nlist, cpu=faiss.clone_index(index))

    return SimpleNamespace(
        __file__="shim", get_num_gpus=lambda: 1, GpuResources=lambda device=0: object(),
        METRIC_L2=METRIC_L2, METRIC_INNER_PRODUCT=METRIC_INNER_PRODUCT,
        GpuIndexFlat=GpuIndexFlat, GpuIndexIVFFlat=GpuIndexIVFFlat,
        GpuIndexBang=GpuIndexBang, SearchParametersBang=SearchParametersBang,
        SearchParameters=SearchParameters, SearchParametersIVF=SearchParametersIVF,
        IDSelectorRange=IDSelectorRange, IDSelectorBitmap=IDSelectorBitmap,
        index_cpu_to_gpu=index_cpu_to_gpu)


class _Dev:
    """A 'device array': holds a numpy array; .get() copies it to the host."""

    def __init__(self, a):
        self.a = np.array(a)

    def get(self):
        return self.a.copy()


def cupy():
    pool = SimpleNamespace(free_all_blocks=lambda: None)
    stream = SimpleNamespace(synchronize=lambda: None)
    runtime = SimpleNamespace(deviceSynchronize=lambda: None, getDeviceCount=lambda: 1,
                              memGetInfo=lambda: (60 << 30, 80 << 30))
    return SimpleNamespace(
        __version__="shim", asarray=lambda x: x if isinstance(x, _Dev) else _Dev(x),
        cuda=SimpleNamespace(runtime=runtime, get_current_stream=lambda: stream),
        get_default_memory_pool=lambda: pool)


def cuvs(faiss, knn):
    """cuVS brute_force / ivf_flat / cagra over numpy (knn) and faiss CPU; the search
    functions take the same positional and keyword arguments as cuVS's, filters
    (filters.from_bitset: bit i % 32 of uint32 word i // 32 set = id i kept) included."""

    class Resources:
        def sync(self):
            pass

    def from_bitset(bitset):
        words = bitset.a
        assert words.dtype == np.uint32 and words.ndim == 1   # as cuVS checks
        return SimpleNamespace(words=words, parent=bitset)

    def _allowed_ids(prefilter, n):
        bits = np.unpackbits(prefilter.words.view(np.uint8), bitorder="little")
        assert len(bits) >= n
        return np.flatnonzero(bits[:n])

    def _faiss_sel(flt, n):
        ids = _allowed_ids(flt, n)
        return faiss.IDSelectorBatch(ids)

    def _metric(m):
        assert m in ("sqeuclidean", "inner_product"), m
        return "l2" if m == "sqeuclidean" else "ip"

    def bf_build(dataset, metric="sqeuclidean", metric_arg=2.0, resources=None):
        return SimpleNamespace(x=dataset.a, metric=_metric(metric))

    def bf_search(index, queries, k, neighbors=None, distances=None, resources=None,
                  prefilter=None):
        ids = None if prefilter is None else _allowed_ids(prefilter, len(index.x))
        D, I = knn(index.x, queries.a, k, index.metric, ids=ids)
        return _Dev(D.astype(np.float32)), _Dev(I)

    class IvfIndexParams:
        def __init__(self, *, n_lists=1024, metric="sqeuclidean", **kw):
            self.n_lists, self.metric = n_lists, _metric(metric)

    class IvfSearchParams:
        def __init__(self, *, n_probes=20):
            self.n_probes = n_probes

    def ivf_build(index_params, dataset, resources=None):
        x = dataset.a
        d = x.shape[1]
        l2 = index_params.metric == "l2"
        q = faiss.IndexFlatL2(d) if l2 else faiss.IndexFlatIP(d)
        index = faiss.IndexIVFFlat(q, d, index_params.n_lists,
                                   faiss.METRIC_L2 if l2 else faiss.METRIC_INNER_PRODUCT)
        index.train(x)
        index.add(x)          # (faiss's Python keeps the quantizer q referenced)
        return index

    def ivf_search(search_params, index, queries, k, neighbors=None, distances=None,
                   resources=None, filter=None):
        index.nprobe = search_params.n_probes
        if filter is None:
            D, I = index.search(queries.a, k)
        else:
            p = faiss.SearchParametersIVF(sel=_faiss_sel(filter, index.ntotal),
                                          nprobe=search_params.n_probes)
            D, I = index.search(queries.a, k, params=p)
        return _Dev(D), _Dev(I)

    class CagraIndexParams:
        def __init__(self, *, metric="sqeuclidean", intermediate_graph_degree=128,
                     graph_degree=64, build_algo="ivf_pq", **kw):
            assert build_algo in ("ivf_pq", "nn_descent", "iterative_cagra_search")
            self.metric = _metric(metric)

    class CagraSearchParams:
        def __init__(self, *, itopk_size=64, **kw):
            self.itopk_size = itopk_size

    def cagra_build(index_params, dataset, resources=None):
        x = dataset.a
        m = faiss.METRIC_L2 if index_params.metric == "l2" else faiss.METRIC_INNER_PRODUCT
        index = faiss.IndexHNSWFlat(x.shape[1], 16, m)
        index.add(x)
        return index

    def cagra_search(search_params, index, queries, k, neighbors=None, distances=None,
                     resources=None, filter=None):
        assert search_params.itopk_size >= k
        if filter is None:
            index.hnsw.efSearch = search_params.itopk_size
            D, I = index.search(queries.a, k)
        else:
            p = faiss.SearchParametersHNSW(sel=_faiss_sel(filter, index.ntotal),
                                           efSearch=search_params.itopk_size)
            D, I = index.search(queries.a, k, params=p)
        return _Dev(D), _Dev(I.astype(np.uint32))     # -1 -> 2^32 - 1, as CAGRA's

    return SimpleNamespace(
        cupy=cupy(), Resources=Resources,
        filters=SimpleNamespace(from_bitset=from_bitset),
        brute_force=SimpleNamespace(build=bf_build, search=bf_search),
        ivf_flat=SimpleNamespace(IndexParams=IvfIndexParams, SearchParams=IvfSearchParams,
                                 build=ivf_build, search=ivf_search),
        cagra=SimpleNamespace(IndexParams=CagraIndexParams, SearchParams=CagraSearchParams,
                              build=cagra_build, search=cagra_search))
