"""Minimal pairs (BLiMP kind, read zero-shot) from held-out Brown texts, using the gold POS tags.

A row is ``(sentence_good, sentence_bad, paradigm)``: ``sentence_good`` is a real Brown sentence as it stands
(detokenised), ``sentence_bad`` the same sentence with ONE token replaced (case kept), ``paradigm`` the word
pair and the side the good sentence has (``is/are:sg``: the good sentence has "is"). An encoder is scored
without training: does its own head prefer the good sentence? Five families, one task each:

``pairs-subject-verb``
    is/are, was/were, has/have, does/do (gold tags as agreement.py's) with agreement.py's site exclusions
    (``exclusion``), and a subject right before the verb (adverbs skipped) whose number is the verb's: a
    pronoun (he/she/it singular, we/you/they plural; "I" with was/have/do) or the last noun of a noun
    phrase that is not the object of a preposition. Excluded (counted): ``no-adjacent-subject`` (inverted,
    relative pronoun, anything else before the verb), ``subject-number`` (the word before has the other
    number: an attractor, a conjoined subject -- the attractor family's candidates), ``noun-in-phrase``
    (that noun closes a prepositional phrase), ``conjoined-subject`` (its phrase follows ``and``/``or``).
``pairs-determiner-noun``
    this/these, that/those (DT/DTS) followed by (an optional adjective and) a noun of their number, with
    agreement.py's ``not-determiner`` and ``invariant-noun`` exclusions; the determiner before an agreeing
    verb ("this is"), which agreement.py keeps, is excluded here (``not-before-noun``): not a determiner.
``pairs-anaphor``
    number: himself/herself/itself (PPL) vs themselves (PPLS); gender: himself vs herself. The anaphor's
    clause is read back to its start (punctuation, a conjunction, a complementiser or a wh-word); its
    possible antecedents are every noun and pronoun in it. Number pairs need at least one antecedent and
    every antecedent of the anaphor's number (he/him/she/her/it/I/me/a singular noun vs they/them/we/us/a
    plural noun); gender pairs need every antecedent a gendered pronoun or noun (he, him, man, father,
    Mr. ...; she, her, woman, mother, Mrs. ...) of the anaphor's gender. Excluded (counted):
    ``no-antecedent``, ``mixed-antecedents`` (an antecedent of the other number/gender, or of none:
    "you", a name for gender), ``indefinite-antecedent`` (everyone, anybody, each, one ...: "themselves"
    may refer to them), ``collective-antecedent`` (the committee ... themselves). One option per sentence:
    a sentence whose antecedents are all gendered pronouns/nouns may serve either the number pair or the
    gender pair; which one is drawn as balance needs (below).
``pairs-attractor``
    the subject-verb pairs across an intervening phrase or clause: from the verb leftwards, a noun phrase
    (the attractor, the OTHER number), then one or more ``of/in/to ...`` phrases or a subject relative
    clause ("who owns the dogs"), back to the head noun phrase (the verb's number) that starts the clause
    (sentence start, a comma, a complementiser, an opening quote). agreement.py's exclusions, plus
    ``no-intervener`` (no phrase/clause between), ``head-number`` (the head has the attractor's number),
    ``head-not-clause-initial`` (the head phrase follows anything else: it may be an object), ``head-noun``
    (the head is collective, invariant or a quantity word), ``conjoined-subject``.
``pairs-irregular``
    past tense (VBD) vs past participle (VBN) of the verbs in ``IRREGULAR`` (distinct forms, neither a
    present form, no accepted variant: went/gone, saw/seen, took/taken, wrote/written ...), flipped both
    ways ("He went" -> "He gone"; "He has gone" -> "He has went"). Excluded: ``aux-before-past`` (a VBD right
    after a form of have/be: a tagging slip), ``participle-after-subject`` (a VBN right after a subject
    pronoun: "I seen", dialect), ``adjectival-participle`` (a VBN between a determiner/adjective and a noun).

Every family: agreement.py's sentence filters (``shaped_sentences``, 6-40 words, prose, not a headline) and
its ``quote-fragment`` and ``case`` rules; ``flip-is-a-source`` (the bad sentence is itself a Brown
sentence); a sentence used once per family (``norm``), one site drawn at random per sentence
(``rng_for(seed, f"minimal-pairs:{family}")``). Pairs either of whose sentences is in the pre-training corpus
(the build's ``check``: normalised sentence, word 13-gram) are dropped and counted.

Balance: for every surface word pair {a, b} (case-sensitive, so any unigram table, cased or not), as many
rows with a in the good sentence as with b; the surplus is dropped (counted). A scorer that only compares the
two differing words' frequencies (any fixed preference per word pair) is right on exactly half the rows.
Texts: every held-out role (``ROLES``: next-sentence and word-scramble's train and dev texts); only a dev
split is written.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Callable, NamedTuple

from .agreement import COLLECTIVE, INVARIANT, QUANT, SITE, exclusion, quote_open_at, recase, shaped_sentences
from .brown import detok
from .text import norm, rng_for

ROLES = ("ns-train", "ns-dev", "wo-train", "wo-dev")
CAP = 1500  # pairs per family at most (each word pair scaled down alike, so the balance holds)
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

    def shared(i, new) -> str | None:
        if quote_open[i] is not None and quote_open[i] > 0:
            return "quote-fragment"
        if recase(words[i], new) is None:
            return "case"
        return None

    for i, (word, tag) in enumerate(zip(words, tags)):
        w = word.lower()
        site = SITE.get(w)
        if w in _SV and site is not None and tag == site[2]:
            pair, partner, _t = site
            side = "sg" if tag in _SG_VERB else "pl"
            why = exclusion(words, tags, i, quote_open)
            simple = _subject_verb(words, tags, i) if why is None else None
            attr, pattern = _attractor(words, tags, i) if why is None else (None, "")
            sv_opts, sv_ex = out["pairs-subject-verb"]
            at_opts, at_ex = out["pairs-attractor"]
            if why is not None:
                sv_ex[f"{pair}:{why}"] += 1
                at_ex[f"{pair}:{why}"] += 1
                continue
            if simple is None:
                sv_opts.append(Option(i, partner, f"{pair}:{side}", pair))
            else:
                sv_ex[f"{pair}:{simple}"] += 1
            if attr is None:
                at_opts.append(Option(i, partner, f"{pair}:{side}", f"{pair}:{pattern}"))
            else:
                at_ex[f"{pair}:{attr}"] += 1
        elif w in _DET and site is not None and tag == site[2]:
            pair, partner, _t = site
            opts, ex = out["pairs-determiner-noun"]
            why = exclusion(words, tags, i, quote_open)
            if why is None:
                j = i + 1
                if j < len(tags) and tags[j] in ("jj", "jjr", "jjs", "jjt", "od"):
                    j += 1
                if j >= len(tags) or tags[j] not in ("nn", "nns"):
                    why = "not-before-noun"
            if why is not None:
                ex[f"{pair}:{why}"] += 1
                continue
            opts.append(Option(i, partner, f"{pair}:{'sg' if tag == 'dt' else 'pl'}", pair))
        elif w in _ANAPHOR and tag == _ANAPHOR_TAG[w]:
            opts, ex = out["pairs-anaphor"]
            why = shared(i, "x")
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
                why = shared(i, opt.new)
            if why is not None:
                ex[f"{'past' if tag == 'vbd' else 'participle'}:{why}"] += 1
                continue
            opts.append(opt)
    return out


def apply(words: list[str], opt: Option) -> list[str]:
    """``words`` with token ``opt.i`` replaced by ``opt.new`` in its case."""
    out = list(words)
    out[opt.i] = recase(words[opt.i], opt.new)
    return out


def surface_pair(words: list[str], opt: Option) -> tuple[str, str]:
    """(the good sentence's word, the bad sentence's word) as they are written."""
    return words[opt.i], recase(words[opt.i], opt.new)


# --------------------------------------------------------------------------- building
class Built(NamedTuple):
    tasks: dict  # family -> rows (good, bad, paradigm)
    stats: dict  # family -> counts


def _choose(cands: list, rng) -> list:
    """One option per sentence, drawn uniformly where a sentence has several."""
    return [(words, text, opts[0] if len(opts) == 1 else rng.choice(opts)) for words, text, opts in cands]


def _choose_anaphor(cands: list, rng) -> list:
    """One option per anaphor sentence, allocated so that balance drops little. Gender first: of the
    sentences that can serve himself/herself, as many himself ones as herself ones (the rest serve number).
    Number: "themselves" sentences are the rarer side; each (in a seeded order) takes the singular anaphor
    with the fewest "themselves" partners so far among those with singular sentences left, so the three
    word pairs get similar counts."""
    order = list(cands)
    rng.shuffle(order)
    gender = {"m": [], "f": []}
    for c in order:
        for o in c[2]:
            if o.pattern == "gender":
                gender[o.paradigm[-1]].append(c)
                break
    g = min(len(gender["m"]), len(gender["f"]))
    chosen, used = [], set()
    for side in ("m", "f"):
        for c in gender[side][:g]:
            chosen.append((c[0], c[1], next(o for o in c[2] if o.pattern == "gender")))
            used.add(id(c))
    cap = Counter()  # singular word -> sentences left for its number pair
    for c in order:
        if id(c) not in used and any(o.pattern == "number" and o.new == "themselves" for o in c[2]):
            cap[c[2][0].paradigm.split("/")[0]] += 1
    taken = Counter()
    for c in order:
        if id(c) in used:
            continue
        number = [o for o in c[2] if o.pattern == "number"]
        if not number:
            continue
        if number[0].new == "themselves":
            chosen.append((c[0], c[1], number[0]))
            continue
        free = [o for o in number if taken[o.new] < cap[o.new]]
        if not free:
            free = number
        best = min(taken[o.new] for o in free)
        opt = next(o for o in free if taken[o.new] == best)
        taken[opt.new] += 1
        chosen.append((c[0], c[1], opt))
    return chosen


def make_minimal_pairs(brown_docs, roles, seed: int = 20240601, split_roles=ROLES,
                       check: Callable[[list], list] | None = None) -> Built:
    """Every family's balanced pairs (module docstring). ``check(pairs)`` takes ``[(good, bad), ...]`` and
    returns, per pair, why it must go (e.g. "in-corpus") or None; the build passes the corpus checks."""
    sent_stats = Counter()
    shaped = shaped_sentences(brown_docs, roles, set(split_roles), sent_stats)
    sources = {norm(text) for _w, _t, text in shaped}
    per = {f: [] for f in FAMILIES}  # family -> [(words, text, [options])]
    cand_sites = {f: Counter() for f in FAMILIES}
    excluded = {f: Counter() for f in FAMILIES}
    seen = {f: set() for f in FAMILIES}
    dup = Counter()
    for words, tags, text in shaped:
        key = norm(text)
        found = sentence_options(words, tags)
        for f, (opts, ex) in found.items():
            excluded[f].update(ex)
            for o in opts:
                cand_sites[f][o.paradigm.split(":")[0] if f != "pairs-attractor" else o.pattern] += 1
            kept = []
            for o in opts:
                if norm(detok(apply(words, o))) in sources:
                    excluded[f][f"{o.paradigm.split(':')[0]}:flip-is-a-source"] += 1
                else:
                    kept.append(o)
            if not kept:
                continue
            if key in seen[f]:
                dup[f] += 1
                continue
            seen[f].add(key)
            per[f].append((words, text, kept))
    chosen = {f: (_choose_anaphor if f == "pairs-anaphor" else _choose)(per[f], rng_for(seed, f"minimal-pairs:{f}"))
              for f in FAMILIES}
    # the corpus checks, one call for every family's candidates
    flat = [(f, n) for f in FAMILIES for n in range(len(chosen[f]))]
    pairs = [(chosen[f][n][1], detok(apply(chosen[f][n][0], chosen[f][n][2]))) for f, n in flat]
    verdicts = check(pairs) if check is not None else [None] * len(pairs)
    removed = {f: Counter() for f in FAMILIES}
    dropped = set()
    for (f, n), why in zip(flat, verdicts):
        if why:
            removed[f][why] += 1
            dropped.add((f, n))
    tasks, stats = {}, {}
    for f in FAMILIES:
        rng = rng_for(seed, f"minimal-pairs:{f}:balance")
        groups = defaultdict(list)  # (good word, bad word) as written -> rows
        for n, (words, text, opt) in enumerate(chosen[f]):
            if (f, n) in dropped:
                continue
            groups[surface_pair(words, opt)].append((text, detok(apply(words, opt)), opt.paradigm))
        keys = [(a, b) for a, b in sorted(groups) if not ((b, a) in groups and (b, a) < (a, b))]
        ks = {key: min(len(groups[key]), len(groups.get(key[::-1], []))) for key in keys}
        total = 2 * sum(ks.values())
        capped = {key: (k * CAP) // total if total > CAP else k for key, k in ks.items()}
        rows, balance_dropped, cap_dropped, final = [], Counter(), Counter(), Counter()
        for key in keys:
            k, kc = ks[key], capped[key]
            pair_name = "/".join(sorted((key[0].lower(), key[1].lower())))
            for grp in (groups[key], groups.get(key[::-1], [])):
                rng.shuffle(grp)
                if len(grp) > k:
                    balance_dropped[pair_name] += len(grp) - k
                if k > kc:
                    cap_dropped[pair_name] += k - kc
                rows.extend(grp[:kc])
                for _g, _b, paradigm in grp[:kc]:
                    final[paradigm] += 1
        rng.shuffle(rows)
        tasks[f] = rows
        stats[f] = {
            "texts": list(split_roles),
            "sentences": dict(sent_stats),
            "site_candidates": dict(sorted(cand_sites[f].items())),
            "site_excluded": dict(sorted(excluded[f].items())),
            "site_excluded_by_rule": dict(sorted(_by_rule(excluded[f]).items())),
            "duplicate_sentences": dup[f],
            "sentences_with_a_pair": len(chosen[f]),
            "removed_by_checks": dict(sorted(removed[f].items())),
            "balance_dropped": dict(sorted(balance_dropped.items())),
            "cap_dropped": dict(sorted(cap_dropped.items())),
            "final_per_paradigm": dict(sorted(final.items())),
            "pairs": len(rows),
        }
    return Built(tasks, stats)


def _by_rule(excluded: Counter) -> Counter:
    out = Counter()
    for k, v in excluded.items():
        out[k.split(":", 1)[1]] += v
    return out
