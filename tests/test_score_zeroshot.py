"""The zero-shot reading of minimal pairs (score/zeroshot.py): PLL and the discriminator's score against a
direct computation with transformers' own classes on an exported checkpoint (random weights), [CLS]/[SEP]
left out of the discriminator's sum, the untrained encoder at chance on a balanced pair set, ties, and the
refusals of tasks a reading cannot score."""

import gzip
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

transformers = pytest.importorskip("transformers")
from transformers import BertForMaskedLM, ElectraForMaskedLM, ElectraForPreTraining  # noqa: E402

from electra_bench.data.tasks import Example  # noqa: E402
from electra_bench.errors import BenchError  # noqa: E402
from electra_bench.present.export import export  # noqa: E402
from electra_bench.pretrain import checkpoint  # noqa: E402
from electra_bench.pretrain.run import with_vocab  # noqa: E402
from electra_bench.score import zeroshot  # noqa: E402
from electra_bench.score.readings import check_readings, readable  # noqa: E402
from test_interop import make_checkpoint, small_preset, tokenizer  # noqa: E402,F401  (a fixture)

transformers.logging.set_verbosity_error()
SENTENCES = ["The keys to the cabinet are on the table.", "Himself walked unbelievably slowly home.",
             "These dogs bark at every passing stranger."]


def pair_task(pairs, name="pairs-test"):
    return SimpleNamespace(spec=SimpleNamespace(name=name, minimal_pairs=True),
                           splits={"dev": [Example(g, b, None) for g, b in pairs]})


def direct_pll(model, tokenizer, sentence: str) -> float:
    """PLL-word-l2r one masked copy at a time through a transformers masked LM."""
    (ids, words), = tokenizer.encode_words([sentence])
    sp = tokenizer.special
    total = 0.0
    for i in range(len(ids)):
        row = [sp.cls] + list(ids) + [sp.sep]
        for j in range(i, len(ids)):
            if words[j] == words[i]:
                row[j + 1] = sp.mask
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([row]), token_type_ids=torch.zeros(1, len(row), dtype=torch.long),
                           attention_mask=torch.ones(1, len(row), dtype=torch.long)).logits
        total += float(F.log_softmax(logits[0, i + 1], -1)[ids[i]])
    return total


def test_pll_matches_transformers_masked_lm(tmp_path, tokenizer):
    ckpt, m = make_checkpoint(tmp_path / "run", "mlm", small_preset(tokenizer, 32), tokenizer)
    export(ckpt, tmp_path / "hf")
    hf = ElectraForMaskedLM.from_pretrained(tmp_path / "hf").eval()
    assert any(len(set(w)) < len(w) for _, w in tokenizer.encode_words(SENTENCES))  # a word of several pieces
    reader = zeroshot.readers_of(m)["pll"]
    ours = zeroshot.pll_scores(reader, tokenizer.encode_words(SENTENCES), tokenizer.special, "cpu", rows_per_batch=7)
    theirs = [direct_pll(hf, tokenizer, s) for s in SENTENCES]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)


def test_generator_pll_matches_transformers_and_loads_from_the_checkpoint(tmp_path, tokenizer):
    preset = small_preset(tokenizer, 32)
    ckpt, _ = make_checkpoint(tmp_path / "run", "rtd", preset, tokenizer)
    export(ckpt, tmp_path / "hf")
    module = checkpoint.load_objective(ckpt, checkpoint.run_preset(ckpt), tokenizer.special)
    readers = zeroshot.readers_of(module)
    assert set(readers) == {"discriminator", "generator"}
    gen = ElectraForMaskedLM.from_pretrained(tmp_path / "hf" / "generator").eval()
    ours = zeroshot.pll_scores(readers["generator"], tokenizer.encode_words(SENTENCES), tokenizer.special, "cpu")
    np.testing.assert_allclose(ours, [direct_pll(gen, tokenizer, s) for s in SENTENCES], rtol=1e-4, atol=1e-4)


def test_discriminator_sums_log_p_original_over_real_tokens_only(tmp_path, tokenizer):
    ckpt, m = make_checkpoint(tmp_path / "run", "rtd", small_preset(tokenizer, 32), tokenizer)
    export(ckpt, tmp_path / "hf")
    disc = ElectraForPreTraining.from_pretrained(tmp_path / "hf").eval()
    ours = zeroshot.discriminator_scores(zeroshot.readers_of(m)["discriminator"], tokenizer.encode_words(SENTENCES),
                                         tokenizer.special, "cpu")
    inner, with_specials = [], []
    for (ids, _) in tokenizer.encode_words(SENTENCES):
        row = torch.tensor([[tokenizer.special.cls] + ids + [tokenizer.special.sep]])
        with torch.no_grad():
            logp = F.logsigmoid(-disc(input_ids=row, token_type_ids=torch.zeros_like(row)).logits[0])
        inner.append(float(logp[1:-1].sum()))
        with_specials.append(float(logp.sum()))
    np.testing.assert_allclose(ours, inner, rtol=1e-5, atol=1e-5)
    # the test can tell: counting [CLS] and [SEP] gives other numbers
    assert np.abs(np.asarray(with_specials) - np.asarray(inner)).min() > 1e-3


def test_whole_word_masking_masks_the_later_pieces_of_the_word_only():
    sp = SimpleNamespace(cls=2, sep=3, mask=4)
    rows = zeroshot._pll_rows([10, 11, 12, 13], [0, 1, 1, 2], sp)
    assert [r[0] for r in rows] == [[2, 4, 11, 12, 13, 3], [2, 10, 4, 4, 13, 3], [2, 10, 11, 4, 13, 3],
                                    [2, 10, 11, 12, 4, 3]]
    assert [(r[1], r[2]) for r in rows] == [(1, 10), (2, 11), (3, 12), (4, 13)]


def test_ties_count_half_and_are_decided_by_the_seed():
    good, bad = np.array([1.0, 2.0, 0.5, 0.5]), np.array([0.0, 3.0, 0.5, 0.5])
    assert zeroshot.pair_accuracy(good, bad) == pytest.approx(0.5)
    wins = [zeroshot._wins(np.zeros(2000), np.zeros(2000), seed) for seed in (0, 1)]
    assert not np.array_equal(wins[0], wins[1])
    assert all(0.45 < w.mean() < 0.55 for w in wins)


def balanced_agreement_pairs(limit_per_cell: int = 60) -> list[tuple[str, str]]:
    """Real pairs: ebs-3 agreement's original sentences with their one agreement word flipped, the same
    number of pairs with each word of a pair on the good side (a frequency-only scorer is at 50%)."""
    flip = {"is": "are", "are": "is", "was": "were", "were": "was"}
    path = Path(__file__).resolve().parent.parent / "electra_bench/assets/ebs-3/agreement/dev.tsv.gz"
    cells: dict[str, list] = {w: [] for w in flip}
    for line in list(gzip.open(path, "rt", encoding="utf-8"))[1:]:
        sentence, label = line.rstrip("\n").split("\t")
        words = sentence.split(" ")
        sites = [i for i, w in enumerate(words) if w in flip]
        if label != "1" or len(sites) != 1 or len(words) > 25:
            continue
        i = sites[0]
        cells[words[i]].append((sentence, " ".join(words[:i] + [flip[words[i]]] + words[i + 1:])))
    n = min(min(len(c) for c in cells.values()), limit_per_cell)
    return [p for c in cells.values() for p in c[:n]]


def test_untrained_encoder_reads_a_balanced_pair_set_at_chance(tokenizer):
    pairs = balanced_agreement_pairs()
    task = pair_task(pairs)
    preset = with_vocab(small_preset(tokenizer, 32).with_knobs(seq_len=64), tokenizer.vocab_size)
    counts = np.ones(tokenizer.vocab_size)
    train = SimpleNamespace(token_counts=lambda v: counts[:v])
    readers = zeroshot.untrained_readers(preset, train, tokenizer.special, seed=0)
    assert set(readers) == {"pll", "discriminator", "generator"}
    metrics = zeroshot.evaluate_pairs(readers, "pll", task, tokenizer, 64, 0, "cpu")
    se = 50 / np.sqrt(metrics["pairs_scored"])  # of a 0-100 accuracy at 50
    assert metrics["pairs_scored"] >= 150
    for name in ("pll_accuracy", "discriminator_accuracy", "generator_accuracy"):
        assert abs(metrics[name] - 50) < 3.5 * se, (name, metrics[name])
    assert metrics["accuracy"] == metrics["pll_accuracy"]


def test_a_trained_like_scorer_is_read_above_chance(tmp_path, tokenizer):
    """The reading can tell: a pair set whose bad sentences hold a token the head never predicts scores
    near 100%, the same pairs swapped near 0%."""
    ckpt, m = make_checkpoint(tmp_path / "run", "mlm", small_preset(tokenizer, 32), tokenizer)
    reader = zeroshot.readers_of(m)
    with torch.no_grad():
        m.head.bias[tokenizer.encode("zebra")] = -50.0  # a word the head finds absurd
    pairs = [(s, s.replace("the", "zebra", 1)) for s in SENTENCES + ["Then the rain came."] if "the" in s]
    acc = zeroshot.evaluate_pairs(reader, "pll", pair_task(pairs), tokenizer, 64, 0, "cpu")["accuracy"]
    swapped = zeroshot.evaluate_pairs(reader, "pll", pair_task([(b, g) for g, b in pairs]), tokenizer, 64, 0,
                                      "cpu")["accuracy"]
    assert acc == 100.0 and swapped == 0.0


def test_long_pairs_are_left_out_and_counted(tokenizer):
    long = " ".join(["word"] * 80) + "."
    ps = zeroshot.pair_set(pair_task([(long, long + " x"), (SENTENCES[0], SENTENCES[2])]), tokenizer, 64)
    assert ps.total == 2 and ps.index.tolist() == [1]


def test_readings_refuse_tasks_they_cannot_score_in_one_line():
    pairs = pair_task([("a", "b")], "pairs-x")
    plain = SimpleNamespace(spec=SimpleNamespace(name="agreement", minimal_pairs=False), splits={})
    assert readable("zeroshot", [plain, pairs]) == [pairs] and readable("probe", [plain, pairs]) == [plain]
    with pytest.raises(BenchError, match="no minimal-pair task") as e:
        check_readings(("zeroshot",), [plain], named=True)
    assert "\n" not in str(e.value)
    with pytest.raises(BenchError, match="task agreement: not a minimal-pair task"):
        check_readings(("zeroshot",), [plain, pairs], named=True)
    with pytest.raises(BenchError, match="task pairs-x: a minimal-pair task"):
        check_readings(("probe",), [plain, pairs], named=True)
    check_readings(("probe", "zeroshot"), [plain, pairs], named=True)  # each task read by one of them
    check_readings(("probe",), [plain, pairs], named=False)  # the whole suite: each reading takes its own
    with pytest.raises(BenchError, match="scores minimal-pair tasks only"):
        zeroshot.pair_set(plain, None, 64)
