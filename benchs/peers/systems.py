"""The systems of compare_peers.py: one small adapter per index, each with
search(x, k) -> (D, I) on host numpy arrays, as a FAISS user calls it.

Peers load in this order, each on its own (a missing one is skipped with its reason):
cuVS (libcuvs.load_library() first, device arrays through CuPy), stock FAISS (GPU
wheel), faiss_ext. cuVS calls are timed with the host copies a FAISS user's call
includes: queries host->device, results device->host, after synchronising cuVS's
stream.

The filtered family searches the same indexes under an id filter (peers/filters.py):
with_filter(f) gives a search(x, k) callable whose filter, faiss_ext's IDSelector or
cuVS's device bitset, is made once there, outside the timed calls.
"""

import gc
import os
import time
from types import SimpleNamespace

import numpy as np

PEERS = ("faiss_ext", "faiss", "cuvs", "hnsw")


class Backends:
    """The modules that loaded (mods[name]) and why the others did not (why[name])."""

    def __init__(self):
        self.mods = {}
        self.why = {}
        self.versions = {}
        self.cupy = None

    def has(self, name):
        return name in self.mods

    def used_device_bytes(self):
        """Bytes in use on the current device (driver view), None without CuPy."""
        if self.cupy is None:
            return None
        try:
            free, total = self.cupy.cuda.runtime.memGetInfo()
            return total - free
        except Exception:  # noqa: BLE001  (no device: leave the column empty)
            return None

    def release_pools(self):
        gc.collect()
        if self.cupy is not None:
            try:
                self.cupy.get_default_memory_pool().free_all_blocks()
            except Exception:  # noqa: BLE001
                pass


def _reason(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:200]


def load_backends(wanted):
    """Imports the peers named in `wanted` (a subset of PEERS)."""
    b = Backends()
    if "cuvs" in wanted:
        # First of all, as the tested recipe says: libcuvs needs nvJitLink >= 13.3 and
        # must load it before anything else loads the machine's 13.0.
        try:
            import libcuvs
            libcuvs.load_library()
        except Exception as e:  # noqa: BLE001
            b.why["cuvs"] = f"libcuvs did not load ({_reason(e)})"
    try:
        import cupy
        b.cupy = cupy
        b.versions["cupy"] = cupy.__version__
    except Exception as e:  # noqa: BLE001
        if "cuvs" in wanted and "cuvs" not in b.why:
            b.why["cuvs"] = f"CuPy did not load ({_reason(e)})"
    if "cuvs" in wanted and "cuvs" not in b.why:
        try:
            import cuvs
            from cuvs.neighbors import brute_force, cagra, ivf_flat
            try:
                from cuvs.common import Resources
            except ImportError:
                Resources = None
            try:            # the filtered family's bitsets (cuvs.neighbors.filters)
                from cuvs.neighbors import filters
            except ImportError:
                filters = None
            if b.cupy.cuda.runtime.getDeviceCount() == 0:
                raise RuntimeError("no CUDA device")
            b.mods["cuvs"] = SimpleNamespace(cupy=b.cupy, brute_force=brute_force,
                                             cagra=cagra, ivf_flat=ivf_flat,
                                             Resources=Resources, filters=filters)
            b.versions["cuvs"] = (f"{getattr(cuvs, '__version__', '?')} "
                                  f"({os.path.dirname(cuvs.__file__)})")
        except Exception as e:  # noqa: BLE001
            b.why["cuvs"] = _reason(e)
    if "faiss" in wanted or "hnsw" in wanted:
        try:
            import faiss
            b.versions["faiss"] = f"{faiss.__version__} ({os.path.dirname(faiss.__file__)})"
            if "hnsw" in wanted:
                b.mods["hnsw"] = faiss
            if "faiss" in wanted:
                if not hasattr(faiss, "StandardGpuResources"):
                    b.why["faiss"] = (f"the faiss module ({faiss.__file__}) has no GPU "
                                      "support: install the faiss-cuda wheel (benchs/PEERS.md)")
                elif faiss.get_num_gpus() == 0:
                    b.why["faiss"] = "faiss sees no CUDA device"
                else:
                    b.mods["faiss"] = faiss
        except Exception as e:  # noqa: BLE001
            for name in ("faiss", "hnsw"):
                if name in wanted:
                    b.why[name] = _reason(e)
    if "faiss_ext" in wanted:
        try:
            import faiss_ext
            if faiss_ext.get_num_gpus() == 0:
                b.why["faiss_ext"] = "faiss_ext sees no CUDA device"
            else:
                b.mods["faiss_ext"] = faiss_ext
                b.versions["faiss_ext"] = faiss_ext.__file__
        except Exception as e:  # noqa: BLE001
            b.why["faiss_ext"] = _reason(e) + " (PYTHONPATH=build-gpu/python?)"
    return b


# ---------------------------------------------------------------------------- base

class System:
    """One index of one peer. Subclasses set peer, label, and build in __init__."""
    peer = ""
    label = ""
    family = ""
    param_name = ""

    def __init__(self):
        self.build_s = None       # seconds to train + add (or build)
        self.mem = None           # device bytes of the index (None: unknown)
        self.notes = []

    def set_param(self, value):
        """nprobe / search_L / itopk / efSearch; flat indexes have none."""

    def search(self, x, k):
        raise NotImplementedError

    def with_filter(self, f):
        """search(x, k) under filter f (peers/filters.Filter) at the current parameter
        (set_param first); its filter is made here, not in the timed calls."""
        raise NotImplementedError(f"{self.label} has no filtered search here")

    def close(self):
        """Drops device objects (the harness also drops its reference)."""


def _timed_build(backends, fn):
    """Runs fn(); returns (seconds, device bytes it took or None)."""
    before = backends.used_device_bytes()
    t0 = time.perf_counter()
    fn()
    secs = time.perf_counter() - t0
    after = backends.used_device_bytes()
    return secs, (after - before if before is not None and after is not None else None)


# ------------------------------------------------------------------------ faiss_ext

def ext_selector(fx, f):
    """faiss_ext's own selector for filter f: IDSelectorRange for a range, else
    IDSelectorBitmap (faiss's byte layout, copied by the module)."""
    if f.kind == "range":
        return fx.IDSelectorRange(int(f.imin), int(f.imax))
    return fx.IDSelectorBitmap(f.bitmap())


class ExtFlat(System):
    peer, label, family = "faiss_ext", "faiss_ext GpuIndexFlat", "flat"

    def __init__(self, b, res, xb, metric, copy=None):
        super().__init__()
        fx = b.mods["faiss_ext"]
        m = fx.METRIC_L2 if metric == "l2" else fx.METRIC_INNER_PRODUCT
        self.fx = fx
        extra = {f"{copy}_copy": True} if copy else {}
        self.index = fx.GpuIndexFlat(res, xb.shape[1], m, **extra)
        if copy:
            self.notes.append(f"{copy}_copy=True: single queries read a {copy} copy of the "
                              "vectors first, then re-rank in FP32 (exact results)")
        self.build_s, _ = _timed_build(b, lambda: self.index.add(xb))
        self.mem = self.index.device_memory_bytes()

    def search(self, x, k):
        return self.index.search(x, k)

    def with_filter(self, f):
        params = self.fx.SearchParameters(sel=ext_selector(self.fx, f))
        return lambda x, k: self.index.search(x, k, params=params)


class ExtIVF(System):
    peer, label, family, param_name = "faiss_ext", "faiss_ext GpuIndexIVFFlat", "ivf", "nprobe"

    def __init__(self, b, res, xb, metric, nlist, trained_cpu=None):
        super().__init__()
        fx = b.mods["faiss_ext"]
        self.fx = fx

        def build():
            if trained_cpu is not None:   # FAISS's trained index: same quantizer
                self.index = fx.index_cpu_to_gpu(res, trained_cpu)
            else:
                m = fx.METRIC_L2 if metric == "l2" else fx.METRIC_INNER_PRODUCT
                self.index = fx.GpuIndexIVFFlat(res, xb.shape[1], nlist, m)
                self.index.train(xb)
                self.notes.append("trained by faiss_ext (no FAISS GPU to share a quantizer)")
            self.index.add(xb)
        self.build_s, _ = _timed_build(b, build)
        self.mem = self.index.device_memory_bytes()

    def set_param(self, value):
        self.index.nprobe = int(value)

    def list_sizes(self):
        return np.array([self.index.list_length(i) for i in range(self.index.nlist)])

    def search(self, x, k):
        return self.index.search(x, k)

    def with_filter(self, f):
        params = self.fx.SearchParametersIVF(nprobe=int(self.index.nprobe),
                                             sel=ext_selector(self.fx, f))
        return lambda x, k: self.index.search(x, k, params=params)


class ExtBang(System):
    peer, label, family, param_name = "faiss_ext", "faiss_ext GpuIndexBang", "graph", "search_L"

    def __init__(self, b, res, xb, metric, entry="nearest_hub"):
        super().__init__()
        fx = b.mods["faiss_ext"]
        self.fx = fx
        m = fx.METRIC_L2 if metric == "l2" else fx.METRIC_INNER_PRODUCT
        self.index = fx.GpuIndexBang(res, xb.shape[1], metric=m)
        self.build_s, _ = _timed_build(b, lambda: self.index.add(xb))
        self.mem = self.index.device_memory_bytes()
        self.entry = entry
        if entry != "nearest_hub":
            self.notes.append(f"walks start at the graph's entry point (entry={entry})")
        self.params = None
        self.search_L = None

    def set_param(self, value):
        self.search_L = int(value)
        self.params = self.fx.SearchParametersBang(search_L=self.search_L, entry=self.entry)

    def search(self, x, k):
        return self.index.search(x, k, params=self.params)

    def with_filter(self, f):
        L = self.search_L if self.search_L is not None else int(self.index.search_L)
        params = self.fx.SearchParametersBang(search_L=L, sel=ext_selector(self.fx, f),
                                              entry=self.entry)
        return lambda x, k: self.index.search(x, k, params=params)


# ---------------------------------------------------------------------------- FAISS

def train_shared_ivf(faiss, fres, xb, metric, nlist):
    """A trained, empty faiss.IndexIVFFlat (k-means on the GPU through FAISS's own
    clustering_index), for FAISS and faiss_ext to share. Returns (index, seconds)."""
    d = xb.shape[1]
    if metric == "l2":
        cpu = faiss.IndexIVFFlat(faiss.IndexFlatL2(d), d, nlist, faiss.METRIC_L2)
        assigner = faiss.GpuIndexFlatL2(fres, d)
    else:
        cpu = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
        assigner = faiss.GpuIndexFlatIP(fres, d)
    cpu.clustering_index = assigner
    t0 = time.perf_counter()
    cpu.train(xb)
    secs = time.perf_counter() - t0
    cpu.clustering_index = None
    del assigner
    return cpu, secs


class FaissFlat(System):
    peer, family = "faiss", "flat"

    def __init__(self, b, fres, xb, metric):
        super().__init__()
        faiss = b.mods["faiss"]
        cls = faiss.GpuIndexFlatL2 if metric == "l2" else faiss.GpuIndexFlatIP
        self.label = f"FAISS {cls.__name__}"
        self.index = cls(fres, xb.shape[1])
        self.build_s, self.mem = _timed_build(b, lambda: self.index.add(xb))

    def search(self, x, k):
        return self.index.search(x, k)


class FaissIVF(System):
    peer, label, family, param_name = "faiss", "FAISS GpuIndexIVFFlat", "ivf", "nprobe"

    def __init__(self, b, fres, xb, trained_cpu):
        super().__init__()
        faiss = b.mods["faiss"]

        def build():
            self.index = faiss.index_cpu_to_gpu(fres, 0, trained_cpu)
            self.index.add(xb)
        self.build_s, self.mem = _timed_build(b, build)

    def set_param(self, value):
        self.index.nprobe = int(value)

    def list_sizes(self):
        return np.array([self.index.getListLength(i) for i in range(self.index.nlist)])

    def search(self, x, k):
        return self.index.search(x, k)


class FaissHNSW(System):
    peer, label, family, param_name = "hnsw", "FAISS CPU IndexHNSWFlat", "graph", "efSearch"

    def __init__(self, b, xb, metric, M=32, ef_construction=40):
        super().__init__()
        faiss = b.mods["hnsw"]
        m = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT
        self.index = faiss.IndexHNSWFlat(xb.shape[1], M, m)
        self.index.hnsw.efConstruction = ef_construction
        self.notes.append(f"M={M}, efConstruction={ef_construction}, "
                          f"{faiss.omp_get_max_threads()} threads (host memory)")
        self.build_s, _ = _timed_build(b, lambda: self.index.add(xb))

    def set_param(self, value):
        self.index.hnsw.efSearch = int(value)

    def search(self, x, k):
        return self.index.search(x, k)


# ----------------------------------------------------------------------------- cuVS

CUVS_METRIC = {"l2": "sqeuclidean", "ip": "inner_product"}


class _Cuvs(System):
    peer = "cuvs"

    def __init__(self, b):
        super().__init__()
        self.cv = b.mods["cuvs"]
        self.cp = self.cv.cupy
        self.res = self.cv.Resources() if self.cv.Resources is not None else None

    def _sync(self):
        if self.res is not None:
            self.res.sync()
        self.cp.cuda.runtime.deviceSynchronize()

    def _to_device(self, x):
        q = self.cp.asarray(x)
        self.cp.cuda.get_current_stream().synchronize()
        return q

    def _to_host(self, D, I):
        self._sync()
        return self.cp.asarray(D).get(), self.cp.asarray(I).get().astype(np.int64, copy=False)

    def _bitset(self, f):
        """cuvs.neighbors.filters.from_bitset over filter f's words copied to the device
        (uint32, bit i % 32 of word i // 32 set = id i kept); the Prefilter keeps the
        device array alive."""
        if self.cv.filters is None:
            raise RuntimeError("this cuVS has no cuvs.neighbors.filters")
        return self.cv.filters.from_bitset(self._to_device(f.bitset_words()))


class CuvsFlat(_Cuvs):
    label, family = "cuVS brute_force", "flat"

    def __init__(self, b, xb, metric):
        super().__init__(b)

        def build():
            self.xb_dev = self._to_device(xb)     # kept: the index may view it
            self.index = self.cv.brute_force.build(self.xb_dev, metric=CUVS_METRIC[metric],
                                                   resources=self.res)
            self._sync()
        self.build_s, self.mem = _timed_build(b, build)

    def search(self, x, k):
        D, I = self.cv.brute_force.search(self.index, self._to_device(x), k,
                                          resources=self.res)
        return self._to_host(D, I)

    def with_filter(self, f):
        pf = self._bitset(f)

        def search(x, k):
            D, I = self.cv.brute_force.search(self.index, self._to_device(x), k,
                                              resources=self.res, prefilter=pf)
            return self._to_host(D, I)
        return search


class CuvsIVF(_Cuvs):
    label, family, param_name = "cuVS ivf_flat", "ivf", "nprobe"

    def __init__(self, b, xb, metric, nlist):
        super().__init__(b)
        ivf = self.cv.ivf_flat

        def build():
            xb_dev = self._to_device(xb)
            params = ivf.IndexParams(n_lists=nlist, metric=CUVS_METRIC[metric])
            self.index = ivf.build(params, xb_dev, resources=self.res)
            self._sync()
            del xb_dev
        self.build_s, self.mem = _timed_build(b, build)
        self.notes.append(f"own k-means (n_lists={nlist}, cuVS defaults)")
        self.sp = ivf.SearchParams(n_probes=1)

    def set_param(self, value):
        self.sp = self.cv.ivf_flat.SearchParams(n_probes=int(value))

    def search(self, x, k):
        D, I = self.cv.ivf_flat.search(self.sp, self.index, self._to_device(x), k,
                                       resources=self.res)
        return self._to_host(D, I)

    def with_filter(self, f):
        sp, flt = self.sp, self._bitset(f)

        def search(x, k):
            D, I = self.cv.ivf_flat.search(sp, self.index, self._to_device(x), k,
                                           resources=self.res, filter=flt)
            return self._to_host(D, I)
        return search


class CuvsCagra(_Cuvs):
    label, family, param_name = "cuVS CAGRA", "graph", "itopk"

    def __init__(self, b, xb, metric, graph_degree=64, intermediate_degree=128):
        super().__init__(b)
        cagra = self.cv.cagra

        def build():
            self.xb_dev = self._to_device(xb)     # CAGRA keeps a view of the dataset
            params = cagra.IndexParams(metric=CUVS_METRIC[metric],
                                       graph_degree=graph_degree,
                                       intermediate_graph_degree=intermediate_degree,
                                       build_algo="nn_descent")
            self.index = cagra.build(params, self.xb_dev, resources=self.res)
            self._sync()
        self.build_s, self.mem = _timed_build(b, build)
        self.notes.append(f"nn_descent, graph_degree={graph_degree}, "
                          f"intermediate={intermediate_degree}")
        self.sp = cagra.SearchParams()

    def set_param(self, value):
        self.sp = self.cv.cagra.SearchParams(itopk_size=int(value))

    def search(self, x, k):
        D, I = self.cv.cagra.search(self.sp, self.index, self._to_device(x), k,
                                    resources=self.res)
        return self._to_host(D, I)

    def with_filter(self, f):
        sp, flt = self.sp, self._bitset(f)

        def search(x, k):
            D, I = self.cv.cagra.search(sp, self.index, self._to_device(x), k,
                                        resources=self.res, filter=flt)
            return self._to_host(D, I)
        return search
