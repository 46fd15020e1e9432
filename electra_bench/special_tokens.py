"""Special tokens shared by the tokenizer, the packer and the objectives (BERT's WordPiece names)."""

from __future__ import annotations

from dataclasses import dataclass

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
ALL = (PAD, UNK, CLS, SEP, MASK)


@dataclass(frozen=True)
class SpecialIds:
    pad: int
    unk: int
    cls: int
    sep: int
    mask: int

    @classmethod
    def from_vocab(cls, token_to_id) -> "SpecialIds":
        return cls(*(token_to_id(t) for t in ALL))


# The ids our own trained tokenizers use (specials first, in this order). BERT's vocab.txt has
# [PAD]=0, [UNK]=100, [CLS]=101, [SEP]=102, [MASK]=103: always look ids up, never assume.
DEFAULT = SpecialIds(pad=0, unk=1, cls=2, sep=3, mask=4)
