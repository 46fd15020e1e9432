"""Fine-tuning and probing: the recipe's mechanics and that both actually learn an easy task."""

import random

import pytest
import torch

from electra_bench.data.tasks import Example, TaskData, TaskSpec
from electra_bench.data.tokenizer import Tokenizer
from electra_bench.score.finetune import Recipe, evaluate, layerwise_param_groups, training_examples
from electra_bench.model import Encoder, EncoderConfig, SequenceClassifier

WORDS = "the a film story plot actor scene music ending very quite rather was is felt looked".split()


def _keyword_task(n_train=384, n_dev=128, seed=0, regression=False, k=8):
    """Chance is 50. Label 1 when the sentence contains 'good', 0 when it contains 'bad' (real-text free, learnable);
    k other words a sentence."""
    rng = random.Random(seed)

    def make(n):
        out = []
        for _ in range(n):
            y = rng.randint(0, 1)
            words = rng.choices(WORDS, k=k)
            words.insert(rng.randint(0, k), "good" if y else "bad")
            out.append(Example(" ".join(words), None, float(y) * 5 if regression else y))
        return out

    spec = TaskSpec(name="keyword", text_fields=("sentence",), labels=None if regression else ("0", "1"),
                    regression=regression, metrics=("spearman",) if regression else ("accuracy",),
                    primary="spearman" if regression else "accuracy")
    return TaskData(spec=spec, splits={"train": make(n_train), "dev": make(n_dev)}, source="test")


@pytest.fixture(scope="module")
def tokenizer():
    texts = [" ".join(random.Random(i).choices(WORDS + ["good", "bad"], k=12)) for i in range(300)]
    return Tokenizer.train(iter(texts), vocab_size=120)


def _encoder(vocab):
    torch.manual_seed(0)
    return Encoder(EncoderConfig(vocab_size=vocab, embedding_size=32, hidden_size=32, num_layers=2, num_heads=2,
                                 ffn_size=64, max_positions=32))


@pytest.mark.parametrize("protocol,floor", [("finetune", 75.0), ("probe", 75.0)])
def test_protocols_learn_an_easy_task(tokenizer, protocol, floor):
    task = _keyword_task()
    recipe = Recipe(protocol=protocol, lr=3e-3, max_len=16, epochs=4, probe_pool=384, probe_examples=300)
    metrics = evaluate(_encoder(tokenizer.vocab_size), task, tokenizer, recipe, seed=0, device=torch.device("cpu"))
    assert metrics["accuracy"] > floor, metrics


def test_regression_finetuning_correlates(tokenizer):
    task = _keyword_task(regression=True)
    recipe = Recipe(protocol="finetune", lr=3e-3, max_len=16, epochs=4)
    metrics = evaluate(_encoder(tokenizer.vocab_size), task, tokenizer, recipe, seed=0, device=torch.device("cpu"))
    assert metrics["spearman"] > 60, metrics


def test_fewshot_uses_only_k_examples_and_seeds_differ(tokenizer):
    task = _keyword_task()
    recipe = Recipe(protocol="fewshot", lr=3e-3, max_len=16, epochs=1, fewshot_examples=8)
    s0, s0_again, s1 = (training_examples(task, recipe, s) for s in (0, 0, 1))
    assert len(s0) == 8 < len(task.splits["train"])  # only k examples
    assert all(any(ex is t for t in task.splits["train"]) for ex in s0)
    assert [id(e) for e in s0] == [id(e) for e in s0_again]  # a seed's sample is fixed
    assert {id(e) for e in s0} != {id(e) for e in s1}  # seeds draw different samples
    full = Recipe(protocol="finetune", max_len=16)
    assert len(training_examples(task, full, 0)) == len(task.splits["train"])  # finetune: all of them
    a = evaluate(_encoder(tokenizer.vocab_size), task, tokenizer, recipe, seed=0, device=torch.device("cpu"))
    b = evaluate(_encoder(tokenizer.vocab_size), task, tokenizer, recipe, seed=0, device=torch.device("cpu"))
    assert a == b and 0 <= a["accuracy"] <= 100  # same seed, same numbers


def test_layerwise_lr_decay_matches_electra():
    enc = Encoder(EncoderConfig(vocab_size=50, embedding_size=16, hidden_size=32, num_layers=3, num_heads=2,
                                ffn_size=64, max_positions=16))
    model = SequenceClassifier(enc, 2)
    groups = layerwise_param_groups(model, lr=1.0, decay=0.5, weight_decay=0.01)
    lr_of = {}
    for g in groups:
        for p in g["params"]:
            lr_of[id(p)] = g["lr"]
    L = 3
    assert lr_of[id(enc.embeddings.word.weight)] == pytest.approx(0.5 ** (L + 2))
    assert lr_of[id(enc.embed_proj.weight)] == pytest.approx(0.5 ** (L + 2))
    for i, layer in enumerate(enc.layers):
        assert lr_of[id(layer.ffn_in.weight)] == pytest.approx(0.5 ** (L + 1 - i))
    assert lr_of[id(model.classifier.weight)] == 1.0
    no_decay = [g for g in groups if g["weight_decay"] == 0.0]
    assert any(any(p is enc.layers[0].attn_norm.weight for p in g["params"]) for g in no_decay)


def test_finetuning_and_scoring_wait_for_the_device_once_per_epoch(tokenizer):
    """Fine-tuning flags a non-finite loss on the device and reads the flag once per epoch; padding is decided
    on the host copy of each batch; scores and probe features are copied off the device once per split. So
    on a GPU the host runs ahead of the device. Counted as dispatched reads (`bool`, `item`: what reaches
    `_local_scalar_dense`), leaving out the optimizer's own step counters, host tensors on any device."""
    import traceback

    from torch.utils._python_dispatch import TorchDispatchMode

    class Reads(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if str(func.overloadpacket) in ("aten._local_scalar_dense", "aten.is_nonzero", "aten.item"):
                if not any("torch/optim" in f.filename for f in traceback.extract_stack()):
                    Reads.n += 1
            return func(*args, **(kwargs or {}))

    task = _keyword_task(n_train=96, n_dev=64)
    for protocol, most in (("finetune", 2), ("probe", 0)):  # 2 epochs: 2 flag reads; the probe: none
        recipe = Recipe(protocol=protocol, lr=3e-3, max_len=16, epochs=2, batch_size=16, probe_pool=96,
                        probe_examples=64)
        Reads.n = 0
        with Reads():
            evaluate(_encoder(tokenizer.vocab_size), task, tokenizer, recipe, seed=0, device=torch.device("cpu"))
        assert Reads.n <= most, (protocol, Reads.n)


def test_a_non_finite_finetuning_loss_is_one_clear_error(tokenizer):
    from electra_bench.errors import BenchError

    recipe = Recipe(protocol="finetune", lr=1e30, max_len=16, epochs=2, batch_size=16)
    with pytest.raises(BenchError, match="non-finite fine-tuning loss on keyword .*epoch 1"):
        evaluate(_encoder(tokenizer.vocab_size), _keyword_task(n_train=96, n_dev=32), tokenizer, recipe, seed=0,
                 device=torch.device("cpu"))
