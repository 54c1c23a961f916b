"""benchs/datasets/make_text_corpus.py on a tiny unpacked-package tree: the sentence
rule, each source's parser, and the split and manifest of a whole run."""

import gzip
import json
import os

import make_text_corpus as mtc


def test_sentence_rule():
    kept = mtc.sentences("Short one. This sentence has enough words to count. "
                         "X = f(y) + g[z] * 2 / 3 + {0, 1, 2}.  "
                         "Another plain English sentence follows here!")
    assert kept == ["This sentence has enough words to count.",
                    "Another plain English sentence follows here!"]
    assert mtc.sentences(" ".join(["word"] * 61) + ".") == []


def test_rst_and_html_cleaning():
    assert mtc.clean_rst("    indented code block here") == ""
    assert mtc.clean_rst("Section title\n=============") == ""
    t = mtc.clean_rst("See :ref:`the guide <guide>` and ``foo`` for **bold** text.")
    assert mtc.normalise_space(t) == "See the guide and foo for bold text."
    page = ('<html><p class="x">First <b>paragraph</b> &amp; more.</p>'
            '<div class="para">A DocBook paragraph.</div><pre>code</pre></html>')
    assert list(mtc.clean_html_text(page)) == ["First paragraph & more.",
                                               "A DocBook paragraph."]


def make_root(root):
    d = os.path.join(root, "usr/share/dictd")
    os.makedirs(d)
    with gzip.open(os.path.join(d, "gcide.dict.dz"), "wt") as f:
        f.write('Abuse \\A*buse"\\, v. t. [F. abuser.]\n'
                '   1. To put to a wrong or improper use; to misapply.\n'
                '      [1913 Webster]\n\n'
                '   2. To use ill; to maltreat; to act injuriously to others.\n'
                '      [1913 Webster]\n')
    with gzip.open(os.path.join(d, "foldoc.dict.dz"), "wt") as f:
        f.write("compiler\n\n   A program that translates a high-level language into "
                "machine code.\n")
    w = os.path.join(root, "usr/share/wordnet")
    os.makedirs(w)
    for pos in ("noun", "verb", "adj", "adv"):
        with open(os.path.join(w, f"data.{pos}"), "w") as f:
            f.write("  1 This software and database is being provided\n")
            f.write(f"00045646 04 n 02 rally 1 003 @ 00036762 n 0000 | the feat of "
                    f"mustering strength for a renewed effort in {pos}; \"he started "
                    f"a rally in the ninth inning of the {pos} game\"\n")
    with open(os.path.join(root, "Translation-en"), "w") as f:
        f.write("Package: foo\nDescription-md5: 0\nDescription-en: short line\n"
                " Foo is a tool that converts files between several formats.\n .\n"
                "  verbatim line that must not be kept at all\n\n")


def test_sources(tmp_path):
    make_root(str(tmp_path))
    root = str(tmp_path)
    gcide = [s for p in mtc.src_gcide(root) for s in mtc.sentences(p)]
    assert gcide == ["To put to a wrong or improper use; to misapply.",
                     "To use ill; to maltreat; to act injuriously to others."]
    assert [s for p in mtc.src_foldoc(root) for s in mtc.sentences(p)] == [
        "A program that translates a high-level language into machine code."]
    wn = list(mtc.src_wordnet(root))
    assert "The feat of mustering strength for a renewed effort in noun." in wn
    assert "he started a rally in the ninth inning of the verb game" in wn
    assert list(mtc.src_descriptions(root)) == [
        "Foo is a tool that converts files between several formats."]


def test_whole_run(tmp_path):
    make_root(str(tmp_path / "root"))
    out = tmp_path / "out"
    mtc.main(["--root", str(tmp_path / "root"), "--out", str(out), "--nq", "3",
              "--sources", "gcide,foldoc,wordnet,descriptions"])
    q = (out / "query.txt").read_text().splitlines()
    b = (out / "base.txt").read_text().splitlines()
    assert len(q) == 3 and len(set(q + b)) == len(q + b) == 12
    m = json.loads((out / "manifest.json").read_text())
    assert m["files"]["query.txt"]["lines"] == 3 and m["distinct_sentences"] == 12
    assert m["per_source"]["wordnet"] == 8 and "translation_en_sha256" in m
    # the same arguments give the same files
    mtc.main(["--root", str(tmp_path / "root"), "--out", str(tmp_path / "again"), "--nq", "3",
              "--sources", "gcide,foldoc,wordnet,descriptions"])
    assert (tmp_path / "again" / "base.txt").read_text() == "\n".join(b) + "\n"
