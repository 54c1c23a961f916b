"""Markdown tables and the QPS-recall plot of compare_peers.py, from its measurement rows.

A row (one system at one point) is a dict: family, peer, label, param, k, batch, qps,
p50_ms (batch 1), r1, r10 (None when not defined), calls; floors per point are kept
apart, keyed by (family, param, k, batch). Rows of the filtered family also carry
filter ("none", "random" or "range"), fraction (1.0 for none), allowed (ids) and pname
(the parameter's name, "" for Flat).
"""

import os

PEER_COLUMNS = (("faiss_ext", "faiss_ext"), ("faiss", "FAISS"), ("cuvs", "cuVS"))


def fmt_qps(q):
    if q is None:
        return "-"
    if q >= 1e6:
        return f"{q / 1e6:.2f}M"
    if q >= 1e4:
        return f"{q / 1e3:.0f}K"
    if q >= 1e3:
        return f"{q / 1e3:.1f}K"
    return f"{q:.0f}"


def fmt_r(r):
    return "-" if r is None else f"{r:.3f}"


def fmt_ms(s):
    """Seconds as milliseconds, 2 significant digits."""
    if s is None:
        return "-"
    ms = s * 1e3
    if ms >= 100:
        return f"{ms:.0f}"
    return f"{ms:.2g}" if ms >= 1e-3 else f"{ms:.1e}"


def fmt_pct(x):
    return f"{100 * x:.2g}%" if x < 0.1 else f"{100 * x:.0f}%"


def fmt_bytes(b):
    return "-" if b is None else f"{b / 2**20:.0f} MiB"


def _index(rows, family):
    """{(param, k, batch): {peer: row}} and the ordered keys."""
    table, keys = {}, []
    for r in rows:
        if r["family"] != family:
            continue
        key = (r["param"], r["k"], r["batch"])
        if key not in table:
            table[key] = {}
            keys.append(key)
        table[key][r["peer"]] = r
    return table, keys


def ratio_to_best(cell):
    """faiss_ext QPS / the faster of FAISS and cuVS at this point; None if either side
    is missing."""
    ext = cell.get("faiss_ext")
    peers = [cell[p]["qps"] for p in ("faiss", "cuvs") if p in cell]
    if ext is None or not peers:
        return None
    return ext["qps"] / max(peers)


def point_table(rows, family, floors, param_title):
    """The Flat or IVF table: one line per (param, k, batch), the peers side by side."""
    table, keys = _index(rows, family)
    if not keys:
        return []
    head = ["k", "batch"] if param_title is None else [param_title, "k", "batch"]
    head += [f"{name} QPS" for _, name in PEER_COLUMNS]
    head += ["faiss_ext / best peer", "recall@1 (ext / FAISS / cuVS)",
             "recall@10 (ext / FAISS / cuVS)",
             "floor ms: DRAM / PCIe / FP32 / TF32", "faiss_ext % of floor"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in keys:
        param, k, batch = key
        cell = table[key]
        cols = [str(k), str(batch)] if param_title is None else [str(param), str(k), str(batch)]
        cols += [fmt_qps(cell[p]["qps"]) if p in cell else "-" for p, _ in PEER_COLUMNS]
        ratio = ratio_to_best(cell)
        cols.append("-" if ratio is None else f"**{ratio:.2f}**")
        for rk in ("r1", "r10"):
            cols.append(" / ".join(fmt_r(cell[p][rk]) if p in cell else "-"
                                   for p, _ in PEER_COLUMNS))
        f = floors.get((family,) + key)
        if f is None:
            cols += ["-", "-"]
        else:
            cols.append(" / ".join(fmt_ms(f[x]) for x in ("dram", "pcie", "fp32", "tf32")))
            ext = cell.get("faiss_ext")
            if ext is None:
                cols.append("-")
            else:
                call_s = batch / ext["qps"]
                cols.append(fmt_pct(f["floor"] / call_s))
        lines.append("| " + " | ".join(cols) + " |")
    return lines


def best_peer_at_recall(rows, recall, exclude_peer="faiss_ext", batch=None,
                        family="graph", filter_key=None):
    """The largest QPS among other peers' points of `family` whose recall@10 is at least
    `recall` (the same batch; filtered family: the same filter_key), as (qps, row) or
    None."""
    best = None
    for r in rows:
        if (r["family"] != family or r["peer"] == exclude_peer or r["r10"] is None
                or r["batch"] != batch or r["r10"] < recall):
            continue
        if filter_key is not None and filter_key_of(r) != filter_key:
            continue
        if best is None or r["qps"] > best[0]:
            best = (r["qps"], r)
    return best


def _equal_recall_cell(rows, row):
    if row is None:
        return "-"
    if row["peer"] != "faiss_ext" or row["r10"] is None:
        return ""
    best = best_peer_at_recall(rows, row["r10"], batch=row["batch"])
    if best is None:
        return "no peer point reaches this recall"
    return (f"{row['qps'] / best[0]:.2f} (vs {best[1]['label']} {best[1]['param']}, "
            f"recall {fmt_r(best[1]['r10'])})")


def graph_table(rows, big_batch):
    """Graph indexes, k = 10: QPS at the big batch and batch-1 p50 per sweep point, and
    for faiss_ext the ratio to the fastest peer point of at least the same recall."""
    lines = []
    pts = [r for r in rows if r["family"] == "graph"]
    if not pts:
        return lines
    head = ["index", "param", "recall@1", "recall@10", f"QPS batch {big_batch}",
            f"faiss_ext / best peer at >= recall (batch {big_batch})", "batch-1 p50 ms",
            "faiss_ext / best peer at >= recall (batch 1)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    seen = []
    for r in pts:
        if (r["label"], r["param"]) not in seen:
            seen.append((r["label"], r["param"]))
    for label, param in seen:
        big = next((r for r in pts if r["label"] == label and r["param"] == param
                    and r["batch"] == big_batch), None)
        one = next((r for r in pts if r["label"] == label and r["param"] == param
                    and r["batch"] == 1), None)
        ref = big or one
        cols = [label, str(param), fmt_r(ref["r1"]), fmt_r(ref["r10"]),
                fmt_qps(big["qps"]) if big else "-", _equal_recall_cell(rows, big),
                f"{one['p50_ms']:.3f}" if one else "-", _equal_recall_cell(rows, one)]
        lines.append("| " + " | ".join(cols) + " |")
    return lines


# --------------------------------------------------------------------- filtered family

def filter_key_of(row):
    """(filter kind, fraction) of a filtered-family row; ("none", 1.0) unfiltered."""
    return (row.get("filter", "none"), row.get("fraction", 1.0))


def filter_name(key):
    kind, fraction = key
    return "none" if kind == "none" else f"{kind} {100 * fraction:g}%"


def _param_text(row):
    return f"{row['pname']} {row['param']}" if row.get("pname") else str(row["param"])


def _unfiltered_ratio(pts, row):
    """This row's call time / the same system's unfiltered call time at the same batch
    and parameter (> 1: slower under the filter), or None."""
    if filter_key_of(row)[0] == "none":
        return None
    unf = next((r for r in pts if r["label"] == row["label"] and r["param"] == row["param"]
                and r["batch"] == row["batch"] and filter_key_of(r)[0] == "none"), None)
    return None if unf is None else unf["qps"] / row["qps"]


def _filtered_peer_cell(rows, row):
    if row is None:
        return "-"
    if row["peer"] != "faiss_ext" or row["r10"] is None:
        return ""
    best = best_peer_at_recall(rows, row["r10"], batch=row["batch"], family="filtered",
                               filter_key=filter_key_of(row))
    if best is None:
        return "no peer point reaches this recall"
    return (f"{row['qps'] / best[0]:.2f} (vs {_point_text(best[1])}, "
            f"recall {fmt_r(best[1]['r10'])})")


def filtered_table(rows, big_batch):
    """Filtered search, k = 10: per system, parameter and filter, QPS at the big batch and
    batch-1 p50, each beside the same system's unfiltered time, recall@10 against exact
    search under the same filter, and for faiss_ext the ratio to the fastest peer point
    of at least its recall under the same filter and batch."""
    pts = [r for r in rows if r["family"] == "filtered"]
    if not pts:
        return []
    head = ["index", "param", "filter", "allowed", f"QPS batch {big_batch}",
            "x unfiltered", "recall@10",
            f"faiss_ext / best peer at >= recall (batch {big_batch})", "batch-1 p50 ms",
            "x unfiltered (batch 1)", "faiss_ext / best peer at >= recall (batch 1)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    seen = []
    for r in pts:
        key = (r["label"], r["param"], filter_key_of(r))
        if key not in seen:
            seen.append(key)
    for label, param, fkey in seen:
        mine = [r for r in pts if r["label"] == label and r["param"] == param
                and filter_key_of(r) == fkey]
        big = next((r for r in mine if r["batch"] == big_batch), None)
        one = next((r for r in mine if r["batch"] == 1), None)
        ref = big or one
        ratio_big = _unfiltered_ratio(pts, big) if big else None
        ratio_one = _unfiltered_ratio(pts, one) if one else None
        frac = "" if fkey[0] == "none" else f" ({100 * fkey[1]:g}%)"
        cols = [label, _param_text(ref), filter_name(fkey), f"{ref.get('allowed', '-')}{frac}",
                fmt_qps(big["qps"]) if big else "-",
                "-" if ratio_big is None else f"{ratio_big:.2f}",
                fmt_r(ref["r10"]), _filtered_peer_cell(rows, big),
                f"{one['p50_ms']:.3f}" if one else "-",
                "-" if ratio_one is None else f"{ratio_one:.2f}",
                _filtered_peer_cell(rows, one)]
        lines.append("| " + " | ".join(cols) + " |")
    return lines


def _fastest(pts, want_ext, target):
    """The fastest faiss_ext (want_ext) or peer point of recall@10 >= target, or None."""
    ok = [r for r in pts if (r["peer"] == "faiss_ext") == want_ext and r["r10"] is not None
          and r["r10"] >= target]
    return max(ok, key=lambda r: r["qps"]) if ok else None


def _point_text(r):
    return r["label"] if r["param"] == "-" else f"{r['label']} {_param_text(r)}"


def filtered_summary(rows, batches, target):
    """One line per filter (and the unfiltered search): at each batch, faiss_ext's fastest
    point with recall@10 >= target against the fastest peer point with recall@10 >=
    target, and faiss_ext / best peer."""
    pts = [r for r in rows if r["family"] == "filtered"]
    keys = list(dict.fromkeys(filter_key_of(r) for r in pts))
    lines = []
    for key in keys:
        parts = []
        for batch in batches:
            at = [r for r in pts if filter_key_of(r) == key and r["batch"] == batch]
            if not at:
                continue
            ext, peer = _fastest(at, True, target), _fastest(at, False, target)
            what = "QPS" if batch > 1 else "QPS (1 / p50)"
            if ext is None and peer is None:
                parts.append(f"batch {batch}: no point reaches recall {target:g}")
            elif ext is None:
                parts.append(f"batch {batch}: no faiss_ext point reaches recall {target:g} "
                             f"(best peer {_point_text(peer)} {fmt_qps(peer['qps'])} {what}, "
                             f"recall {fmt_r(peer['r10'])})")
            elif peer is None:
                parts.append(f"batch {batch}: {_point_text(ext)} "
                             f"{fmt_qps(ext['qps'])} {what} (recall {fmt_r(ext['r10'])}); "
                             f"no peer point reaches recall {target:g}")
            else:
                parts.append(f"batch {batch}: {_point_text(ext)} "
                             f"{fmt_qps(ext['qps'])} {what} (recall {fmt_r(ext['r10'])}) / "
                             f"best peer {_point_text(peer)} {fmt_qps(peer['qps'])} "
                             f"(recall {fmt_r(peer['r10'])}) = "
                             f"**{ext['qps'] / peer['qps']:.2f}**")
        if parts:
            allowed = next(r.get("allowed") for r in pts if filter_key_of(r) == key)
            name = "unfiltered" if key[0] == "none" else filter_name(key)
            lines.append(f"- {name} ({allowed} ids): " + "; ".join(parts))
    return lines


def systems_table(systems):
    lines = ["| index | family | build s (train + add) | device memory | notes |",
             "|---|---|---|---|---|"]
    for s in systems:
        build = "-" if s.get("build_s") is None else f"{s['build_s']:.1f}"
        lines.append(f"| {s['label']} | {s['family']} | {build} | {fmt_bytes(s.get('mem'))} "
                     f"| {'; '.join(s.get('notes', []))} |")
    return lines


def write_plot(rows, path, title, big_batch):
    """QPS (log) against recall@10 at k = 10: the big batch and batch 1 side by side.
    Returns None, or why no plot was written."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        return f"no plot: matplotlib did not load ({type(e).__name__}: {e})"
    pts = [r for r in rows if r["k"] == 10 and r["r10"] is not None
           and r["family"] != "filtered"]
    if not pts:
        return "no plot: no k = 10 points"
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.5))
    for ax, batch in zip(axes, (big_batch, 1)):
        for label in dict.fromkeys(r["label"] for r in pts):
            mine = sorted((r["r10"], r["qps"]) for r in pts
                          if r["label"] == label and r["batch"] == batch)
            if not mine:
                continue
            style = "o-" if label.startswith("faiss_ext") else "s--"
            ax.plot([p[0] for p in mine], [p[1] for p in mine], style, label=label,
                    markersize=4)
        ax.set_xlabel("recall@10")
        ax.set_ylabel("QPS" + (" (1 / p50 latency)" if batch == 1 else ""))
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"batch {batch}, k = 10")
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def write_markdown(path, header_lines, sections):
    """header lines, then (title, lines) sections; returns the text."""
    out = list(header_lines)
    for title, lines in sections:
        if not lines:
            continue
        out += ["", f"## {title}", ""] + list(lines)
    text = "\n".join(out) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return text
