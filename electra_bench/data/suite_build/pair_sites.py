"""Where a held-out Brown sentence can become a minimal pair: every family's sites in one tagged sentence
(``sentence_options``), each a token and its replacement (``Option``), and the rules that exclude a site. The
families, their rules and how the pairs are balanced: minimal_pairs.py's docstring."""
from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from .agreement import COLLECTIVE, INVARIANT, QUANT, SITE, exclusion, quote_open_at, recase

FAMILIES = ("pairs-subject-verb", "pairs-determiner-noun", "pairs-anaphor", "pairs-attractor", "pairs-irregular")

_SV = {"is", "are", "was", "were", "has", "have", "does", "do"}
_SG_VERB = {"bez", "bedz", "hvz", "doz"}
_DET = {"this", "these", "that", "those"}
_SG_NOUN, _PL_NOUN = {"nn", "np"}, {"nns", "nps"}
_NOUN = _SG_NOUN | _PL_NOUN
# premodifiers a noun phrase may start with (walking left from its last noun)
_PREMOD = {"at", "ap", "jj", "jjr", "jjs", "jjt", "cd", "od", "pp$", "abn", "dt", "dts", "dti", "nn$", "np$",
           "nns$", "nps$", "vbn", "vbg"}
_CLAUSE_START = {",", "cs", "``", "--", ":", ";"}
_PPO_NUMBER = {"him": "sg", "her": "sg", "it": "sg", "me": "sg", "them": "pl", "us": "pl"}

# past tense, past participle: distinct, neither a present/base form, no accepted variant of the other
# (left out: come/become/run/overcome (participle = base), beat, get/got, forget, prove, strike, wake,
# awake, break (broke = penniless), sink/shrink/spring/stink (past variants sunk, shrunk ...), lie/lay,
# bear, show, do)
IRREGULAR = (
    ("arose", "arisen"), ("ate", "eaten"), ("began", "begun"), ("blew", "blown"), ("chose", "chosen"),
    ("drank", "drunk"), ("drew", "drawn"), ("drove", "driven"), ("fell", "fallen"), ("flew", "flown"),
    ("forbade", "forbidden"), ("forgave", "forgiven"), ("foresaw", "foreseen"), ("forsook", "forsaken"),
    ("froze", "frozen"), ("gave", "given"), ("grew", "grown"), ("hid", "hidden"), ("knew", "known"),
    ("mistook", "mistaken"), ("outgrew", "outgrown"), ("overtook", "overtaken"), ("overthrew", "overthrown"),
    ("rang", "rung"), ("rewrote", "rewritten"), ("rode", "ridden"), ("rose", "risen"), ("sang", "sung"),
    ("saw", "seen"), ("shook", "shaken"), ("slew", "slain"), ("spoke", "spoken"), ("stole", "stolen"),
    ("strode", "stridden"), ("strove", "striven"), ("swam", "swum"), ("swore", "sworn"), ("took", "taken"),
    ("threw", "thrown"), ("tore", "torn"), ("trod", "trodden"), ("undertook", "undertaken"),
    ("underwent", "undergone"), ("went", "gone"), ("withdrew", "withdrawn"), ("wore", "worn"),
    ("wove", "woven"), ("wrote", "written"),
)
_PAST = {p: v for p, v in IRREGULAR}
_PART = {v: p for p, v in IRREGULAR}

# anaphors: word -> (number, gender)
_ANAPHOR = {"himself": ("sg", "m"), "herself": ("sg", "f"), "itself": ("sg", "n"), "themselves": ("pl", None)}
_ANAPHOR_TAG = {"himself": "ppl", "herself": "ppl", "itself": "ppl", "themselves": "ppls"}
_MASC = {"he", "him", "his", "man", "men", "boy", "father", "husband", "son", "brother", "king", "uncle",
         "gentleman", "mr.", "sir", "nephew", "grandfather", "priest", "monk", "lord", "duke", "prince",
         "bishop", "fellow", "guy"}
_FEM = {"she", "her", "hers", "woman", "women", "girl", "mother", "wife", "daughter", "sister", "queen", "aunt",
        "lady", "mrs.", "miss", "madam", "niece", "grandmother", "nun", "duchess", "princess", "actress",
        "widow", "bride"}
_INDEFINITE = {"everyone", "everybody", "anyone", "anybody", "someone", "somebody", "no", "nobody", "none",
               "each", "every", "any", "either", "neither", "one", "whoever", "person", "people"}
_CLAUSE_BREAK = {",", ".", ";", ":", "--", "cs", "cc", "wdt", "wps", "wpo", "wrb", "wql", "``", "''", "(", ")"}


class Option(NamedTuple):
    """One way to make a pair from a sentence: replace token ``i`` by ``new``; ``paradigm`` e.g. is/are:sg."""

    i: int
    new: str
    paradigm: str
    pattern: str


def _left(tags, i) -> int:
    """The index before ``i`` skipping adverbs, qualifiers and ``not`` (-1 at the start)."""
    j = i - 1
    while j >= 0 and (tags[j].startswith("rb") or tags[j] in ("*", "ql")):
        j -= 1
    return j


def _base(tag: str) -> str:
    return tag[:-3] if tag.endswith("-tl") else tag


def _np_start(words, tags, j) -> int:
    """Start of the noun phrase whose last noun is at ``j``: earlier nouns (compounds), then premodifiers."""
    k = j
    while k - 1 >= 0 and _base(tags[k - 1]) in _NOUN:
        k -= 1
    while k - 1 >= 0 and _base(tags[k - 1]) in _PREMOD:
        k -= 1
    return k


def _number(words, tags, j) -> str | None:
    t = _base(tags[j])
    if t in _SG_NOUN:
        return "sg"
    if t in _PL_NOUN:
        return "pl"
    if t == "ppo":
        return _PPO_NUMBER.get(words[j].lower())
    return None


def _verb_number(tag: str) -> str:
    return "sg" if tag in _SG_VERB else "pl"


# --------------------------------------------------------------------------- families
def _subject_verb(words, tags, i) -> str | None:
    """Why the verb site at ``i`` is not a simple subject-verb site (None: it is)."""
    vn = _verb_number(tags[i])
    j = _left(tags, i)
    if j < 0:
        return "no-adjacent-subject"
    t, w = _base(tags[j]), words[j].lower()
    if t == "pps":
        return None if vn == "sg" else "subject-number"
    if t == "ppss":
        if w == "i":
            return None if tags[i] in ("bedz", "hv", "do") else "subject-number"
        return None if vn == "pl" else "subject-number"
    if t not in _NOUN:
        return "no-adjacent-subject"
    if _number(words, tags, j) != vn:
        return "subject-number"
    k = _np_start(words, tags, j)
    if k > 0 and tags[k - 1] == "in":
        return "noun-in-phrase"
    if k > 0 and tags[k - 1] == "cc":
        return "conjoined-subject"
    return None


def _attractor(words, tags, i) -> tuple[str | None, str]:
    """(why the verb site at ``i`` is not an attractor site or None, the pattern: "pp" or "relative")."""
    vn = _verb_number(tags[i])
    j = _left(tags, i)
    if j < 0 or _number(words, tags, j) is None:
        return "no-intervener", ""
    if _number(words, tags, j) == vn:
        return "no-intervener", ""
    # the attractor's phrase, then a chain of prepositional phrases or one subject relative clause
    k = j if _base(tags[j]) == "ppo" else _np_start(words, tags, j)
    pattern = ""

    def noun_at(m):
        return m >= 0 and _number(words, tags, m) is not None and _base(tags[m]) != "ppo"

    while True:
        m = k - 2 if k - 1 >= 0 and tags[k - 1] == "in" else k - 1
        if m >= 0 and tags[m] in ("vbg", "vbn") and noun_at(m - 1):
            head = m - 1  # a reduced relative: "the houses built by the men", "the man wearing hats"
            pattern = "participle"
        elif m == k - 2 and noun_at(m):
            head = m  # a prepositional phrase: "the key to the cabinets"
            pattern = pattern or "pp"
        elif not pattern and k - 3 >= 0 and tags[k - 1] in ("vbd", "vbz", "vb", "hvd", "hvz") \
                and tags[k - 2] in ("wps", "wdt") and noun_at(k - 3):
            head = k - 3  # a subject relative clause: "the man who owns the dogs"
            k = _np_start(words, tags, head)
            pattern = "relative"
            break
        else:
            break
        k = _np_start(words, tags, head)
    if not pattern:
        return "no-intervener", ""
    if k > 0 and tags[k - 1] == "cc":
        return "conjoined-subject", pattern
    if k > 0 and tags[k - 1] not in _CLAUSE_START:
        return "head-not-clause-initial", pattern
    if _number(words, tags, head) != vn:
        return "head-number", pattern
    hw = words[head].lower()
    if hw in COLLECTIVE or hw in INVARIANT or hw in QUANT:
        return "head-noun", pattern
    return None, pattern


def _clause_nominals(words, tags, i) -> list[int]:
    """Indices of the nouns and pronouns of the anaphor's clause, read back from ``i`` to its start."""
    out = []
    j = i - 1
    while j >= 0:
        t = _base(tags[j])
        if t in _CLAUSE_BREAK:
            break
        if t in _NOUN or t in ("pps", "ppss", "ppo", "pn", "pp$", "ppl", "ppls") or t.startswith("pn"):
            out.append(j)
        j -= 1
    return out


def _anaphor_options(words, tags, i) -> tuple[list[Option], str | None]:
    """Options for the anaphor at ``i`` (number and/or gender), or ([], why not)."""
    w = words[i].lower()
    number, gender = _ANAPHOR[w]
    noms = _clause_nominals(words, tags, i)
    if not noms:
        return [], "no-antecedent"
    low = [words[j].lower() for j in noms]
    if any(x in _INDEFINITE or _base(tags[j]).startswith("pn") for x, j in zip(low, noms)) \
            or any(words[j - 1].lower() in _INDEFINITE for j in noms if j > 0):
        return [], "indefinite-antecedent"
    if any(x in COLLECTIVE for x in low):
        return [], "collective-antecedent"
    nums = []
    for x, j in zip(low, noms):
        t = _base(tags[j])
        if t == "pps" or (t == "ppss" and x == "i") or t == "pp$" and x in ("his", "her", "its", "my"):
            nums.append("sg")
        elif t == "ppss" and x in ("we", "they"):
            nums.append("pl")
        elif t == "pp$" and x in ("their", "our"):
            nums.append("pl")
        elif t in ("ppl", "ppls"):
            nums.append(_ANAPHOR.get(x, (None,))[0])
        else:
            nums.append(_number(words, tags, j))
    opts = []
    if all(n == number for n in nums):
        if number == "sg":
            opts.append(Option(i, "themselves", f"{w}/themselves:sg", "number"))
        else:
            for sg in ("himself", "herself", "itself"):
                opts.append(Option(i, sg, f"{sg}/themselves:pl", "number"))
    if gender in ("m", "f"):
        lex = _MASC if gender == "m" else _FEM
        other = _FEM if gender == "m" else _MASC
        if all(x in lex and x not in other for x in low):
            partner = "herself" if gender == "m" else "himself"
            opts.append(Option(i, partner, f"himself/herself:{gender}", "gender"))
    if not opts:
        return [], "mixed-antecedents"
    return opts, None


def _irregular(words, tags, i) -> tuple[Option | None, str | None]:
    w, t = words[i].lower(), tags[i]
    n = len(words)
    if t == "vbd" and w in _PAST:
        j = _left(tags, i)
        if j >= 0 and (tags[j].startswith("hv") or tags[j].startswith("be")):
            return None, "aux-before-past"
        return Option(i, _PAST[w], f"{w}/{_PAST[w]}:past", "past->participle"), None
    if t == "vbn" and w in _PART:
        j = _left(tags, i)
        if j >= 0 and j == i - 1 and tags[j] in ("pps", "ppss"):
            return None, "participle-after-subject"
        if i + 1 < n and _base(tags[i + 1]) in _NOUN and i > 0 and _base(tags[i - 1]) in _PREMOD | {"ql"}:
            return None, "adjectival-participle"
        return Option(i, _PART[w], f"{_PART[w]}/{w}:participle", "participle->past"), None
    return None, None


def sentence_options(words: list[str], tags: list[str]) -> dict[str, tuple[list[Option], Counter]]:
    """Every family's options in one tagged sentence, and the sites each rule excluded
    (``"pattern:rule"`` counts), before the corpus and ``flip-is-a-source`` checks."""
    quote_open = quote_open_at(words)
    out = {f: ([], Counter()) for f in FAMILIES}
    for i, (word, tag) in enumerate(zip(words, tags)):
        w = word.lower()
        site = SITE.get(w)
        if w in _SV and site is not None and tag == site[2]:
            _subject_verb_site(words, tags, i, quote_open, out)
        elif w in _DET and site is not None and tag == site[2]:
            _determiner_site(words, tags, i, quote_open, out["pairs-determiner-noun"])
        elif w in _ANAPHOR and tag == _ANAPHOR_TAG[w]:
            opts, ex = out["pairs-anaphor"]
            why = _shared_rules(words, i, "x", quote_open)
            new_opts = []
            if why is None:
                new_opts, why = _anaphor_options(words, tags, i)
            if why is not None:
                ex[f"{w}:{why}"] += 1
                continue
            opts.extend(new_opts)
        elif (tag == "vbd" and w in _PAST) or (tag == "vbn" and w in _PART):
            opts, ex = out["pairs-irregular"]
            opt, why = _irregular(words, tags, i)
            if why is None:
                why = _shared_rules(words, i, opt.new, quote_open)
            if why is not None:
                ex[f"{'past' if tag == 'vbd' else 'participle'}:{why}"] += 1
                continue
            opts.append(opt)
    return out


def _shared_rules(words, i, new, quote_open) -> str | None:
    """agreement.py's quote-fragment and case rules, for the families that do not use its ``exclusion``."""
    if quote_open[i] is not None and quote_open[i] > 0:
        return "quote-fragment"
    if recase(words[i], new) is None:
        return "case"
    return None


def _subject_verb_site(words, tags, i, quote_open, out: dict) -> None:
    """An is/are ... site: an option or an exclusion for the subject-verb and the attractor families."""
    pair, partner, _t = SITE[words[i].lower()]
    side = "sg" if tags[i] in _SG_VERB else "pl"
    why = exclusion(words, tags, i, quote_open)
    simple = _subject_verb(words, tags, i) if why is None else None
    attr, pattern = _attractor(words, tags, i) if why is None else (None, "")
    sv_opts, sv_ex = out["pairs-subject-verb"]
    at_opts, at_ex = out["pairs-attractor"]
    if why is not None:
        sv_ex[f"{pair}:{why}"] += 1
        at_ex[f"{pair}:{why}"] += 1
        return
    if simple is None:
        sv_opts.append(Option(i, partner, f"{pair}:{side}", pair))
    else:
        sv_ex[f"{pair}:{simple}"] += 1
    if attr is None:
        at_opts.append(Option(i, partner, f"{pair}:{side}", f"{pair}:{pattern}"))
    else:
        at_ex[f"{pair}:{attr}"] += 1


def _determiner_site(words, tags, i, quote_open, family: tuple) -> None:
    """A this/these ... site: an option when a noun (after an optional adjective) follows, else an exclusion."""
    pair, partner, _t = SITE[words[i].lower()]
    opts, ex = family
    why = exclusion(words, tags, i, quote_open)
    if why is None:
        j = i + 1
        if j < len(tags) and tags[j] in ("jj", "jjr", "jjs", "jjt", "od"):
            j += 1
        if j >= len(tags) or tags[j] not in ("nn", "nns"):
            why = "not-before-noun"
    if why is not None:
        ex[f"{pair}:{why}"] += 1
        return
    opts.append(Option(i, partner, f"{pair}:{'sg' if tags[i] == 'dt' else 'pl'}", pair))


def apply(words: list[str], opt: Option) -> list[str]:
    """``words`` with token ``opt.i`` replaced by ``opt.new`` in its case."""
    out = list(words)
    out[opt.i] = recase(words[opt.i], opt.new)
    return out


def surface_pair(words: list[str], opt: Option) -> tuple[str, str]:
    """(the good sentence's word, the bad sentence's word) as they are written."""
    return words[opt.i], recase(words[opt.i], opt.new)
