#!/usr/bin/env python3
"""English sentences from Debian's documentation packages, for a real text-embedding
data set (embed_text.py turns them into MiniLM vectors on the GPU machine).

    mkdir -p .data/text-debs && cd .data/text-debs && apt-get download dict-gcide \\
        wordnet-base linux-doc-6.1 python3.11-doc perl-doc manpages debian-reference-en
    for f in *.deb; do dpkg-deb -x "$f" ../text-root; done; cd ../..
    python3 benchs/datasets/make_text_corpus.py --root .data/text-root \\
        --debs .data/text-debs --out .data/minilm-inputs

Sources, each read from the unpacked packages under --root:
  gcide      GNU Collaborative International Dictionary of English (dict-gcide):
             definitions, usage notes and quotations
  wordnet    WordNet 3.0 glosses and their example sentences (wordnet-base)
  linux-doc  the Linux kernel's Documentation/ (.rst / .txt, linux-doc-6.1)
  python-doc Python 3.11's HTML documentation (python3.11-doc)
  perl-doc   Perl's pod pages (perl-doc)
  man        section 1-8 man pages (manpages)
  debian-reference   the Debian Reference (HTML, debian-reference-en)

Paragraphs are cleaned of markup, split into sentences, and a sentence is kept when it
has 4 to 60 words, at most 400 characters and mostly letters; exact duplicates
(case-insensitive) are dropped. The distinct sentences are shuffled with --seed; the
first --nq are the queries, the next --nb (all the rest by default) the base. Writes
query.txt, base.txt (one sentence a line, UTF-8) and manifest.json (packages and their
versions, counts per source, arguments, SHA-256 of both files).
"""

import argparse
import glob
import gzip
import html
import json
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from carry_parts import sha256_of  # noqa: E402

MIN_WORDS, MAX_WORDS, MAX_CHARS = 4, 60, 400
SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


# ------------------------------------------------------------------------- cleaning

def normalise_space(text):
    return re.sub(r"\s+", " ", text).strip()


def letters_ratio(s):
    return sum(c.isalpha() or c == " " for c in s) / max(1, len(s))


def sentences(paragraph):
    """The kept sentences of one cleaned paragraph."""
    out = []
    for s in SENTENCE_END.split(normalise_space(paragraph)):
        s = s.strip(" -*#|")
        words = s.split()
        if (MIN_WORDS <= len(words) <= MAX_WORDS and len(s) <= MAX_CHARS
                and letters_ratio(s) >= 0.8 and any(c.islower() for c in s)):
            out.append(s)
    return out


def paragraphs(text):
    """Blank-line separated blocks, their indentation kept (it tells code and
    definitions from headings)."""
    for block in re.split(r"\n[ \t]*\n", text):
        block = block.strip("\n").rstrip()
        if block.strip():
            yield block


RST_ROLE = re.compile(r":[a-z:]+:`([^`<]*)(?:<[^>]*>)?`")


def clean_rst(block):
    """Drops directives, literal blocks and markup of reStructuredText / plain text."""
    lines = block.splitlines()
    if any(x.lstrip().startswith((".. ", "::", "$ ", "# ", ">>>", "+-", "|")) for x in lines[:1]):
        return ""
    if lines and lines[0].startswith((" ", "\t")):       # indented: code or literal
        return ""
    if re.fullmatch(r"[=\-~^*#+`]{3,}", lines[-1].strip() if lines else ""):
        return ""                                     # a section title
    t = RST_ROLE.sub(r"\1", block)
    t = re.sub(r"`+([^`]*)`+_?", r"\1", t)
    t = re.sub(r"\*\*?([^*]+)\*\*?", r"\1", t)
    t = re.sub(r"https?://\S+", "", t)
    return t


def clean_html_text(raw):
    """The text of the paragraphs of an HTML page: <p> elements, and DocBook's
    <div class="para">."""
    for m in re.finditer(r"<p(?:\s[^>]*)?>(.*?)</p>|<div class=\"para\">(.*?)</div>", raw,
                         flags=re.S | re.I):
        body = re.sub(r"<[^>]+>", "", m.group(1) or m.group(2) or "")
        yield html.unescape(body)


# -------------------------------------------------------------------------- sources

def _dictd(root, name):
    """Paragraphs of a dictd dictionary (usr/share/dictd/NAME.dict.dz): headword lines
    (at the left margin) and etymologies in brackets dropped."""
    path = os.path.join(root, f"usr/share/dictd/{name}.dict.dz")
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        text = f.read()
    for block in paragraphs(text):
        lines = block.splitlines()
        while lines and not lines[0][:1].isspace() and lines[0].strip():
            lines = lines[1:]                          # headword line
        t = "\n".join(lines)
        t = re.sub(r"^\s*\[[^\]]*\]", "", t)             # etymology
        t = re.sub(r"\[(1913 Webster|PJC|WordNet 1\.5|Century Dict\.|Obs\.|R\.)[^\]]*\]", "", t)
        t = re.sub(r"--[A-Z][\w. ]*$", "", t.strip())   # quotation author
        t = re.sub(r"^\s*\d+\.\s*", "", t)              # sense number
        t = re.sub(r"[{}]", "", t)
        if t.strip().startswith(("Syn:", "Note:")):
            t = t.strip()[5:]
        yield t


def src_gcide(root):
    yield from _dictd(root, "gcide")


def src_foldoc(root):
    yield from _dictd(root, "foldoc")


def src_wordnet(root):
    for pos in ("noun", "verb", "adj", "adv"):
        path = os.path.join(root, f"usr/share/wordnet/data.{pos}")
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("  ") or "|" not in line:
                    continue
                gloss = line.split("|", 1)[1].strip()
                parts = [p.strip().strip('"') for p in gloss.split(";")]
                definition = parts[0]
                if definition:
                    yield definition[0].upper() + definition[1:] + "."
                for ex in parts[1:]:
                    if ex:
                        yield ex


def src_descriptions(root):
    """Long descriptions of every Debian 12 package: the Translation-en index that
    `apt-get -o Acquire::Languages=en update` fetches, decompressed to
    ROOT/Translation-en (README); the short description line is dropped."""
    path = os.path.join(root, "Translation-en")
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for entry in text.split("\n\n"):
        lines = entry.splitlines()
        body = [x for x in lines if x.startswith(" ")]
        para = []
        for line in body + [" ."]:
            if line.strip() == ".":
                if para:
                    yield " ".join(para)
                para = []
            elif not line.startswith("  "):              # two spaces: verbatim
                para.append(line.strip())


def _read_maybe_gz(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def src_linux_doc(root):
    base = os.path.join(root, "usr/share/doc/linux-doc-6.1/Documentation")
    files = []
    for ext in ("*.rst", "*.rst.gz", "*.txt", "*.txt.gz"):
        files += glob.glob(os.path.join(base, "**", ext), recursive=True)
    for path in sorted(files):
        for block in paragraphs(_read_maybe_gz(path)):
            t = clean_rst(block)
            if t:
                yield t


def _html(pattern):
    def source(root):
        for path in sorted(glob.glob(os.path.join(root, pattern), recursive=True)):
            if not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                yield from clean_html_text(f.read())
    return source


def src_perl_doc(root):
    files = glob.glob(os.path.join(root, "usr/share/perl", "*", "pod", "*.pod"))
    for path in sorted(files):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for block in paragraphs(text):
            if block.startswith(("=", " ", "\t")):
                continue
            yield re.sub(r"[A-Z]<+\s*([^<>]*?)\s*>+", r"\1", block)


TROFF_ESCAPE = re.compile(r"\\s[+-]?\d+|\\f[BIRP]|\\f\(..|\\\(..|\\\*\(..|\\[-&e|^]|\\.")


def src_man(root):
    """Text lines of section 1-8 man pages, paragraph by paragraph; requests, font and
    size escapes, and tables (.TS ... .TE) dropped."""
    files = glob.glob(os.path.join(root, "usr/share/man/man[1-8]", "*.gz"))
    for path in sorted(files):
        para, in_table = [], False
        for line in _read_maybe_gz(path).splitlines():
            if line.startswith((".TS", ".TE")):
                in_table = line.startswith(".TS")
                continue
            if in_table:
                continue
            if line.startswith((".", "'")):
                if line[:3] in (".PP", ".LP", ".P", ".TP", ".SH", ".SS", ".IP", ".br", ".nf"):
                    if para:
                        yield " ".join(para)
                    para = []
                continue
            para.append(TROFF_ESCAPE.sub(" ", line))
        if para:
            yield " ".join(para)


# (name, Debian package, paragraphs(root)), read in this order: a sentence counts for
# the first source that has it.
SOURCES = [
    ("gcide", "dict-gcide", src_gcide),
    ("wordnet", "wordnet-base", src_wordnet),
    ("foldoc", "dict-foldoc", src_foldoc),
    ("linux-doc", "linux-doc-6.1", src_linux_doc),
    ("python-doc", "python3.11-doc", _html("usr/share/doc/python3.11/html/**/*.html")),
    ("perl-doc", "perl-doc", src_perl_doc),
    ("man", "manpages", src_man),
    ("debian-reference", "debian-reference-en",
     _html("usr/share/debian-reference/**/*.en.html")),
    ("debian-handbook", "debian-handbook",
     _html("usr/share/doc/debian-handbook/html/en-US/**/*.html")),
    ("postgresql-doc", "postgresql-doc-15",
     _html("usr/share/doc/postgresql-doc-15/html/**/*.html")),
    ("django-doc", "python-django-doc", _html("usr/share/doc/python-django-doc/html/**/*.html")),
    ("sqlite-doc", "sqlite3-doc", _html("usr/share/doc/sqlite3/**/*.html")),
    ("octave-doc", "octave-doc", _html("usr/share/doc/octave/**/*.html")),
    ("gimp-help", "gimp-help-en", _html("usr/share/gimp/2.0/help/en/**/*.html")),
    ("rust-doc", "rust-doc", _html("usr/share/doc/rust-doc/html/**/*.html")),
    ("descriptions", "apt Translation-en", src_descriptions),
]
PACKAGES = [pkg for _, pkg, _ in SOURCES if not pkg.startswith("apt ")]


# ----------------------------------------------------------------------------- main

def collect(root, names):
    """Distinct kept sentences in source order, and counts per source."""
    seen, kept, counts = set(), [], {}
    for name, _, fn in SOURCES:
        if name not in names:
            continue
        before = len(kept)
        for para in fn(root):
            for s in sentences(para):
                key = s.lower()
                if key not in seen:
                    seen.add(key)
                    kept.append(s)
        counts[name] = len(kept) - before
        print(f"  {name}: {counts[name]} new distinct sentences", flush=True)
    return kept, counts


def deb_versions(folder):
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.deb"))):
        try:
            fields = subprocess.run(["dpkg-deb", "-f", path, "Package", "Version"],
                                    capture_output=True, text=True, check=True).stdout
            kv = dict(line.split(": ", 1) for line in fields.splitlines() if ": " in line)
            out[kv["Package"]] = kv["Version"]
        except (OSError, subprocess.CalledProcessError, KeyError):
            out[os.path.basename(path)] = "?"
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="folder where the .debs were unpacked")
    ap.add_argument("--debs", help="folder of the .debs (their versions go to the manifest)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--nq", type=int, default=10_000)
    ap.add_argument("--nb", type=int, help="base sentences (default: all after the queries)")
    ap.add_argument("--sources", default=",".join(n for n, _, _ in SOURCES))
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args(argv)

    names = args.sources.split(",")
    unknown = [n for n in names if n not in {s[0] for s in SOURCES}]
    if unknown:
        sys.exit(f"make_text_corpus: unknown sources {unknown}")
    kept, counts = collect(args.root, names)
    random.Random(args.seed).shuffle(kept)
    if len(kept) <= args.nq:
        sys.exit(f"make_text_corpus: only {len(kept)} sentences")
    queries = kept[:args.nq]
    base = kept[args.nq:] if args.nb is None else kept[args.nq:args.nq + args.nb]
    os.makedirs(args.out, exist_ok=True)
    files = {}
    for name, rows in (("query.txt", queries), ("base.txt", base)):
        path = os.path.join(args.out, name)
        with open(path, "w", encoding="utf-8") as f:
            for s in rows:
                f.write(s + "\n")
        files[name] = dict(lines=len(rows), sha256=sha256_of(path))
    manifest = dict(tool="benchs/datasets/make_text_corpus.py", args=vars(args),
                    packages=deb_versions(args.debs) if args.debs else {},
                    distinct_sentences=len(kept), per_source=counts, files=files,
                    rule=f"{MIN_WORDS}-{MAX_WORDS} words, <= {MAX_CHARS} chars, >= 80% "
                         "letters or spaces, case-insensitive exact duplicates dropped")
    translations = os.path.join(args.root, "Translation-en")
    if "descriptions" in names and os.path.exists(translations):
        manifest["translation_en_sha256"] = sha256_of(translations)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"{len(kept)} distinct sentences: {len(queries)} queries, {len(base)} base -> {args.out}")


if __name__ == "__main__":
    main()
