"""Corpus reading: formats, document boundaries, streaming, and bad input."""

from __future__ import annotations

import bz2
import gzip
import lzma
import sys

import pytest

from electra_bench.data import corpus as corpus_mod
from electra_bench.data.corpus import open_corpus
from electra_bench.data.describe import corpus_info
from electra_bench.errors import BenchError


def docs(spec) -> list[list[str]]:
    return list(open_corpus(spec).documents())


def test_single_file_blank_lines_separate_documents(tmp_path):
    f = tmp_path / "c.txt"
    f.write_text("First sentence.\nSecond one.\n\n   \n\nDoc two line.\r\n\n\nDoc three.\n", encoding="utf-8")
    assert docs(f) == [["First sentence.", "Second one."], ["Doc two line."], ["Doc three."]]
    lines = list(open_corpus(f).lines())
    assert lines == ["First sentence.", "Second one.", "", "Doc two line.", "", "Doc three."]


def test_each_file_is_a_document_and_directories_are_recursive_sorted(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.txt").write_text("bee one\nbee two\n")
    (tmp_path / "a.txt").write_text("\ufeffalpha\n")  # a BOM is not text
    (tmp_path / ".hidden.txt").write_text("never read\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: never read\n")
    (tmp_path / "empty.txt").write_text("")
    c = open_corpus(tmp_path)
    assert [p.name for p in c.files] == ["a.txt", "x.txt", "empty.txt"]
    assert docs(tmp_path) == [["alpha"], ["bee one", "bee two"]]


@pytest.mark.parametrize("opener,suffix", [(gzip.open, ".gz"), (lzma.open, ".xz"), (bz2.open, ".bz2")])
def test_compressed_files(tmp_path, opener, suffix):
    f = tmp_path / f"c.txt{suffix}"
    with opener(f, "wt", encoding="utf-8") as fh:
        fh.write("Compressed text here.\nStill doc one.\n\nDoc two, with ünïcödé.\n")
    assert docs(f) == [["Compressed text here.", "Still doc one."], ["Doc two, with ünïcödé."]]


def test_glob_mixes_formats_and_sorts(tmp_path):
    (tmp_path / "2.txt").write_text("two\n")
    with gzip.open(tmp_path / "1.txt.gz", "wt") as fh:
        fh.write("one\n")
    (tmp_path / "3.md").write_text("not matched\n")
    c = open_corpus(str(tmp_path / "*.txt*"))
    assert [p.name for p in c.files] == ["1.txt.gz", "2.txt"]
    assert docs(str(tmp_path / "*.txt*")) == [["one"], ["two"]]
    assert [p.name for p in open_corpus(str(tmp_path / "**" / "*.md")).files] == ["3.md"]


def test_hash_depends_on_content_not_location(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.txt").write_text("same text\n")
    (tmp_path / "b" / "y.txt").write_text("same text\n")
    assert open_corpus(tmp_path / "a").sha256() == open_corpus(tmp_path / "b").sha256()
    (tmp_path / "b" / "y.txt").write_text("other text\n")
    assert open_corpus(tmp_path / "a").sha256() != open_corpus(tmp_path / "b").sha256()


def test_long_lines_are_cut_at_spaces(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus_mod, "MAX_LINE_BYTES", 64)
    words = [f"word{i}" for i in range(100)]
    f = tmp_path / "long.txt"
    f.write_text(" ".join(words) + "\nnext line\n")
    lines = list(open_corpus(f).lines())
    assert lines[-1] == "next line"
    assert " ".join(lines[:-1]).split() == words  # no word is cut, none lost
    assert all(len(x.encode()) <= 64 for x in lines)


def test_long_line_without_spaces_is_cut_at_character_boundary(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus_mod, "MAX_LINE_BYTES", 16)
    text = "é" * 40  # 2 bytes each
    (tmp_path / "x.txt").write_text(text + "\n")
    assert "".join(open_corpus(tmp_path / "x.txt").lines()) == text


# -- bad input ------------------------------------------------------------------------------------


def test_missing_path(tmp_path):
    with pytest.raises(BenchError, match="nope.txt: no such file"):
        open_corpus(tmp_path / "nope.txt")


def test_glob_without_match(tmp_path):
    with pytest.raises(BenchError, match=r"\*\.zzz: no file matches"):
        open_corpus(str(tmp_path / "*.zzz"))


def test_empty_directory(tmp_path):
    with pytest.raises(BenchError, match="holds no"):
        open_corpus(tmp_path)


def test_empty_corpus(tmp_path):
    f = tmp_path / "blank.txt"
    f.write_text("\n   \n\n")
    with pytest.raises(BenchError, match=r"blank.txt: the corpus holds no text"):
        list(open_corpus(f).lines())


def test_binary_file_names_file_and_line(tmp_path):
    f = tmp_path / "model.bin"
    f.write_bytes(b"ok line\n\x00\x01\x02\x03 binary")
    with pytest.raises(BenchError, match=r"model.bin:2: NUL byte at byte offset 8.*binary"):
        list(open_corpus(f).lines())


def test_non_utf8_names_file_line_and_offset(tmp_path):
    f = tmp_path / "latin1.txt"
    f.write_bytes("first\nna\u00efve\n".encode("latin-1"))
    with pytest.raises(BenchError, match=r"latin1.txt:2: invalid UTF-8 byte 0xef at byte offset 8"):
        list(open_corpus(f).lines())


def test_non_utf8_inside_gzip(tmp_path):
    f = tmp_path / "bad.txt.gz"
    with gzip.open(f, "wb") as fh:
        fh.write(b"fine\n\xff\xfe\n")
    with pytest.raises(BenchError, match=r"bad.txt.gz:2: invalid UTF-8 .*\(decompressed\)"):
        list(open_corpus(f).lines())


def test_truncated_gzip(tmp_path):
    f = tmp_path / "cut.txt.gz"
    data = gzip.compress(("some words here\n" * 5000).encode())
    f.write_bytes(data[: len(data) // 2])
    with pytest.raises(BenchError, match=r"cut.txt.gz: corrupt or truncated gzip"):
        list(open_corpus(f).lines())


def test_hf_without_datasets_says_to_install_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` fail
    c = open_corpus("hf:wikitext:wikitext-103-raw-v1")
    assert c.hf_name == "wikitext" and c.hf_config == "wikitext-103-raw-v1"
    with pytest.raises(BenchError, match=r"electra-bench\[hf\]"):
        list(c.lines())


def test_inspect_corpus_counts(tmp_path):
    f = tmp_path / "c.txt"
    f.write_text("one two three\nfour five\n\nsix\n")
    info = corpus_info(str(f))
    assert info["kind"] == "corpus" and info["files"] == 1
    assert (info["documents"], info["sentences"], info["tokens"]) == (2, 3, 6)
    assert info["token_unit"] == "words"
    assert info["sentence_length"]["max"] == 3 and info["document_length"]["max"] == 5
    assert set(info["sentence_length"]) == {"count", "mean", "p50", "p90", "p99", "max"}
