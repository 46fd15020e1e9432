"""Data-layer benchmark: tokenize-and-cache throughput, cache-hit load time, bounded memory.

    python benchmarks/bench_data.py                 # 25 MB and 100 MB corpora
    python benchmarks/bench_data.py --sizes 10 50   # other sizes (MB)

The corpora are real English text (the embedded suite's corpus, else /usr/share/common-licenses and
/usr/share/doc), its documents reshuffled and repeated until the target size, written as plain .txt.
Each measurement runs in a fresh subprocess so that its peak RSS (getrusage ru_maxrss) is its own:

- build:  build_token_cache on a cold cache (tokenize with the Rust batch API, write the memmaps)
- hit:    build_token_cache again (hash memo warm: stat + open memmaps)
- rehash: a hit with the file-hash memo deleted (re-reads the corpus to hash it)
- pack:   ELECTRA packing of the whole cache into seq_len=128 sequences (+ held-out split)

If memory is bounded, peak RSS stays flat while the corpus grows 4x.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- child: one measurement in a fresh process ----------------------------------------------------


def child(args) -> None:
    from electra_bench.data.corpus import open_corpus
    from electra_bench.data.token_cache import build_token_cache
    from electra_bench.data.tokenizer import Tokenizer

    tok = Tokenizer.load(args.tok)
    corpus = open_corpus(args.corpus)
    base = rss_mb()
    out = {"baseline_rss_mb": base}
    if args.child == "rehash":
        (Path(args.cache) / "file_hashes.json").unlink(missing_ok=True)
    t0 = time.perf_counter()
    cache = build_token_cache(corpus, tok, cache_dir=args.cache, progress=False)
    out["seconds"] = time.perf_counter() - t0
    out["hit"] = cache.hit
    out["n_tokens"] = cache.n_tokens
    out["text_bytes"] = corpus.total_bytes
    if args.child == "pack":
        from electra_bench.data.packing import PackingConfig, pack

        base = rss_mb()
        out["baseline_rss_mb"] = base
        t0 = time.perf_counter()
        train, heldout = pack(cache, tok.special, PackingConfig(seq_len=128), seed=0, progress=False)
        out["seconds"] = time.perf_counter() - t0
        out["sequences"] = len(train) + len(heldout)
    out["peak_rss_mb"] = peak_mb()
    print(json.dumps(out))


def run_child(kind: str, corpus: Path, tok: Path, cache: Path) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, "--corpus", str(corpus), "--tok", str(tok), "--cache", str(cache)]
    res = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TOKENIZERS_PARALLELISM": "true"})
    if res.returncode != 0:
        raise SystemExit(f"child {kind} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


# -- parent ---------------------------------------------------------------------------------------


def source_documents() -> tuple[str, list[list[str]]]:
    from electra_bench.data.corpus import open_corpus
    from electra_bench.data.suite import suite_dir

    suite_corpus = suite_dir() / "corpus.txt.xz"
    if suite_corpus.is_file():
        return str(suite_corpus), list(open_corpus(suite_corpus).documents())
    docs: list[list[str]] = []
    for d in ("/usr/share/common-licenses", "/usr/share/doc"):
        if not Path(d).is_dir():
            continue
        for p in sorted(Path(d).rglob("*")):
            if p.is_file() and p.suffix in ("", ".txt", ".md", ".rst") and p.stat().st_size < 5_000_000:
                try:
                    docs.extend(open_corpus(p).documents())
                except Exception:  # noqa: BLE001 - skip binary / non-UTF-8 files
                    continue
    return "/usr/share/{common-licenses,doc}", docs


def write_corpus(path: Path, docs: list[list[str]], size_mb: float, seed: int) -> int:
    """Documents reshuffled (and their sentences rotated) and repeated until size_mb; bytes written."""
    rng = random.Random(seed)
    target = int(size_mb * 1_000_000)
    written = 0
    with open(path, "w", encoding="utf-8") as f:
        while written < target:
            order = list(range(len(docs)))
            rng.shuffle(order)
            for i in order:
                doc = docs[i]
                k = rng.randrange(len(doc))
                text = "\n".join(doc[k:] + doc[:k]) + "\n\n"
                f.write(text)
                written += len(text.encode("utf-8"))
                if written >= target:
                    break
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=float, nargs=2, default=[25, 100], metavar=("SMALL_MB", "LARGE_MB"))
    ap.add_argument("--vocab-size", type=int, default=8192)
    ap.add_argument("--workdir", type=Path, default=None, help="kept if given; else a temp dir, deleted")
    ap.add_argument("--child", choices=["build", "hit", "rehash", "pack"], help=argparse.SUPPRESS)
    ap.add_argument("--corpus", help=argparse.SUPPRESS)
    ap.add_argument("--tok", help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)

    from electra_bench.data.tokenizer import Tokenizer

    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-data-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        src, docs = source_documents()
        print(f"source text: {src} ({len(docs)} documents)")
        t0 = time.perf_counter()
        tok = Tokenizer.train((s for d in docs for s in d), args.vocab_size)
        tok.save(work / "tok")
        print(f"tokenizer: {tok.vocab_size} WordPiece tokens trained in {time.perf_counter() - t0:.1f}s "
              f"(CPUs available: {len(os.sched_getaffinity(0))})")
        rows = []
        for i, size in enumerate(args.sizes):
            corpus = work / f"corpus_{size:g}MB.txt"
            nbytes = write_corpus(corpus, docs, size, seed=i)
            cache = work / f"cache_{size:g}"
            shutil.rmtree(cache, ignore_errors=True)
            build = run_child("build", corpus, work / "tok", cache)
            hit = run_child("hit", corpus, work / "tok", cache)
            rehash = run_child("rehash", corpus, work / "tok", cache)
            packed = run_child("pack", corpus, work / "tok", cache)
            assert not build["hit"] and hit["hit"] and rehash["hit"]
            rows.append({"size_mb": nbytes / 1e6, "build": build, "hit": hit, "rehash": rehash, "pack": packed})
            corpus.unlink()
        report(rows)
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


def report(rows: list[dict]) -> None:
    cols = ["corpus", "tokens", "tokenize+cache", "MB/s", "Mtok/s", "peak RSS", "RSS - baseline",
            "hit (memo)", "hit (rehash)", "pack T=128", "pack peak RSS"]
    table = []
    for r in rows:
        b, h, rh, p = r["build"], r["hit"], r["rehash"], r["pack"]
        table.append([
            f"{r['size_mb']:.0f} MB", f"{b['n_tokens'] / 1e6:.1f} M", f"{b['seconds']:.1f} s",
            f"{r['size_mb'] / b['seconds']:.2f}", f"{b['n_tokens'] / b['seconds'] / 1e6:.2f}",
            f"{b['peak_rss_mb']:.0f} MB", f"{b['peak_rss_mb'] - b['baseline_rss_mb']:.0f} MB",
            f"{h['seconds'] * 1000:.1f} ms", f"{rh['seconds'] * 1000:.0f} ms",
            f"{p['seconds']:.1f} s", f"{p['peak_rss_mb']:.0f} MB",
        ])
    if len(rows) == 2:
        s, big = rows
        ratio = lambda f: f"{f(big) / f(s):.2f}x"  # noqa: E731
        table.append([
            "ratio L/S", ratio(lambda r: r["build"]["n_tokens"]), ratio(lambda r: r["build"]["seconds"]),
            ratio(lambda r: r["size_mb"] / r["build"]["seconds"]),
            ratio(lambda r: r["build"]["n_tokens"] / r["build"]["seconds"]),
            ratio(lambda r: r["build"]["peak_rss_mb"]),
            ratio(lambda r: r["build"]["peak_rss_mb"] - r["build"]["baseline_rss_mb"]),
            ratio(lambda r: r["hit"]["seconds"]), ratio(lambda r: r["rehash"]["seconds"]),
            ratio(lambda r: r["pack"]["seconds"]), ratio(lambda r: r["pack"]["peak_rss_mb"]),
        ])
    widths = [max(len(c), *(len(row[i]) for row in table)) for i, c in enumerate(cols)]
    line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))  # noqa: E731
    print(line(cols))
    print(line(["-" * w for w in widths]))
    for row in table:
        print(line(row))
    print("peak RSS = getrusage max RSS of the measuring subprocess (python + numpy + tokenizers "
          "[+ torch for pack]); baseline = RSS after imports, before the measured call")


if __name__ == "__main__":
    main()
