#!/usr/bin/env python3
"""Builds a real SIFT dataset from the photographs and artwork of Debian's wallpaper
packages: 128-d OpenCV SIFT descriptors, a base set and queries taken from images
held out of the base (the SIFT1M recipe, with images anyone can get).

    apt-get download plasma-workspace-wallpapers gnome-backgrounds mate-backgrounds \\
        ukui-wallpapers lomiri-wallpapers lomiri-wallpapers-16.04 lomiri-wallpapers-20.04 \\
        sway-backgrounds
    for f in *.deb; do dpkg-deb -x "$f" root; done
    python3 make_sift_wallpapers.py --images root/usr/share --out sift-wallpapers

Writes <out>/base.fvecs (nb x 128), <out>/query.fvecs (nq x 128) (or .bvecs with
--format bvecs: the same values in a quarter of the bytes) and <out>/manifest.json
(OpenCV version, parameters, every image with its size, descriptor count and role).
Ground truth: make_groundtruth.py (on the GPU).

Of each wallpaper only its largest variant is used (packages ship the same picture
at several resolutions, and dark/light versions); images below --min-megapixels
are skipped. SIFT runs with contrastThreshold 0.01 by default (OpenCV's 0.04 finds
few keypoints in the smooth gradients of wallpapers) and keeps at most the 50,000
strongest keypoints of an image (--max-per-image: one detailed picture would
otherwise give a quarter of the set). OpenCV's float descriptors are whole numbers
in [0, 255] (as in Lowe's SIFT), so the values are exact in uint8.
"""

import argparse
import json
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import vecs_io

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp")


def find_images(roots):
    """Image files under the directories `roots` (each real file once), sorted.
    Preview thumbnails of KDE wallpaper packages (screenshot.*) are left out."""
    found = set()
    for root in roots:
        if not os.path.isdir(root):
            raise FileNotFoundError(f"image directory {root} does not exist")
        for dirpath, _, names in os.walk(root):
            for name in names:
                if not name.lower().endswith(IMAGE_EXTENSIONS):
                    continue
                if os.path.splitext(name)[0].lower() == "screenshot":
                    continue
                path = os.path.realpath(os.path.join(dirpath, name))
                if os.path.isfile(path):
                    found.add(path)
    return sorted(found)


def variant_group(path):
    """Key shared by the variants of one picture: the package directory of a KDE
    wallpaper (<Name>/contents/images*/WxH.ext), else the file name without its
    resolution (Elephants_3840x2160), orientation (_Portrait) or dark/light (-d, -l)
    suffixes."""
    parts = path.split(os.sep)
    if "contents" in parts:
        return os.sep.join(parts[:parts.index("contents")])
    stem = os.path.splitext(path)[0]
    stem = re.sub(r"_Portrait$", "", stem)
    stem = re.sub(r"[_-]?\d{3,5}x\d{3,5}", "", stem)
    stem = re.sub(r"-[dl]$", "", stem)
    return stem


def select_variants(sizes, min_megapixels):
    """sizes: {path: (height, width)}. The largest variant of every picture with at
    least min_megapixels, sorted by path."""
    best = {}
    for path in sorted(sizes):
        h, w = sizes[path]
        if h * w < min_megapixels * 1e6:
            continue
        key = variant_group(path)
        if key not in best or h * w > sizes[best[key]][0] * sizes[best[key]][1]:
            best[key] = path
    return sorted(best.values())


def split_images(counts, nq, query_images, seed):
    """counts: descriptors per image (list). Chooses held-out query images: a random
    `query_images` of the images with descriptors, plus more until they hold at least
    nq descriptors. Returns (query image indices, base image indices), sorted."""
    rng = np.random.default_rng(seed)
    candidates = [i for i in rng.permutation(len(counts)) if counts[i] > 0]
    query, total = [], 0
    for i in candidates:
        if len(query) >= query_images and total >= nq:
            break
        query.append(int(i))
        total += counts[i]
    if total < nq:
        raise ValueError(f"all images together hold {total} descriptors, fewer than nq={nq}")
    if len(query) == len(candidates):
        raise ValueError("no image is left for the base set")
    qset = set(query)
    return sorted(query), [i for i in range(len(counts)) if i not in qset]


def sample_rows(n_available, n, rng):
    """Sorted indices of n rows drawn without replacement."""
    if n > n_available:
        raise ValueError(f"asked for {n} rows, only {n_available} available")
    return np.sort(rng.choice(n_available, size=n, replace=False))


def image_size(path):
    import cv2
    cv2.setNumThreads(1)
    im = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    if im is None:
        raise ValueError(f"OpenCV cannot read {path}")
    return im.shape


def sift_descriptors(path, contrast_threshold, max_keypoints=0):
    """(n, 128) uint8 SIFT descriptors of one image (grayscale), of its
    max_keypoints strongest keypoints (0: all)."""
    import cv2
    cv2.setNumThreads(1)
    im = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    if im is None:
        raise ValueError(f"OpenCV cannot read {path}")
    sift = cv2.SIFT_create(nfeatures=max_keypoints, contrastThreshold=contrast_threshold)
    _, des = sift.detectAndCompute(im, None)
    if des is None:
        return np.zeros((0, 128), np.uint8)
    if des.shape[1] != 128 or des.min() < 0 or des.max() > 255 or not np.all(des == np.round(des)):
        raise ValueError(f"{path}: SIFT descriptors are not whole numbers in [0, 255]")
    return des.astype(np.uint8)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", nargs="+", required=True,
                    help="directories searched recursively for .jpg/.png/.webp images")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--nb", type=int, default=1_000_000,
                    help="base descriptors (sampled from the base images; error if fewer)")
    ap.add_argument("--nq", type=int, default=10_000, help="query descriptors")
    ap.add_argument("--query-images", type=int, default=8,
                    help="images held out for the queries (more if they hold fewer than nq)")
    ap.add_argument("--contrast-threshold", type=float, default=0.01)
    ap.add_argument("--max-per-image", type=int, default=50_000,
                    help="strongest keypoints kept per image (0: all)")
    ap.add_argument("--format", choices=["fvecs", "bvecs"], default="fvecs")
    ap.add_argument("--min-megapixels", type=float, default=1.0)
    ap.add_argument("--max-images", type=int, default=0,
                    help="use only the first N selected images (0: all), for a quick try")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    args = ap.parse_args(argv)

    import cv2
    t0 = time.time()
    paths = find_images(args.images)
    with ProcessPoolExecutor(args.workers) as pool:
        sizes = dict(zip(paths, pool.map(image_size, paths)))
        selected = select_variants(sizes, args.min_megapixels)
        if args.max_images:
            selected = selected[:args.max_images]
        print(f"{len(paths)} image files, {len(selected)} pictures selected "
              f"({sum(sizes[p][0] * sizes[p][1] for p in selected) / 1e6:.0f} megapixels, "
              f"{sum(os.path.getsize(p) for p in selected) / 2**20:.1f} MiB)", flush=True)
        # Largest first, so that the last tasks are short.
        order = sorted(range(len(selected)), key=lambda i: -sizes[selected[i]][0] * sizes[selected[i]][1])
        results = pool.map(sift_descriptors, [selected[i] for i in order],
                           [args.contrast_threshold] * len(order),
                           [args.max_per_image] * len(order))
        descriptors = [None] * len(selected)
        for i, des in zip(order, results):
            descriptors[i] = des
    counts = [len(des) for des in descriptors]
    print(f"{sum(counts)} descriptors in {time.time() - t0:.0f} s", flush=True)

    query_idx, base_idx = split_images(counts, args.nq, args.query_images, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    query_pool = np.concatenate([descriptors[i] for i in query_idx])
    base_pool = np.concatenate([descriptors[i] for i in base_idx])
    if len(base_pool) < args.nb:
        sys.exit(f"make_sift_wallpapers: the base images hold {len(base_pool)} descriptors, "
                 f"fewer than --nb {args.nb} (lower --contrast-threshold or add images)")
    query = query_pool[sample_rows(len(query_pool), args.nq, rng)]
    base = base_pool[sample_rows(len(base_pool), args.nb, rng)]

    os.makedirs(args.out, exist_ok=True)
    vecs_io.write_vectors(os.path.join(args.out, "base." + args.format), base)
    vecs_io.write_vectors(os.path.join(args.out, "query." + args.format), query)
    roles = {i: "query" for i in query_idx}
    manifest = {
        "opencv": cv2.__version__,
        "numpy": np.__version__,
        "args": {k: v for k, v in vars(args).items() if k != "workers"},
        "nb": int(len(base)), "nq": int(len(query)),
        "base_pool": int(len(base_pool)), "query_pool": int(len(query_pool)),
        "images": [{"path": os.path.relpath(p, os.path.commonpath(args.images)),
                    "height": int(sizes[p][0]), "width": int(sizes[p][1]),
                    "descriptors": counts[i], "role": roles.get(i, "base")}
                   for i, p in enumerate(selected)],
    }
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"wrote {args.out}: base {base.shape} from {len(base_idx)} images "
          f"({len(base_pool)} available), query {query.shape} from {len(query_idx)} images, "
          f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
