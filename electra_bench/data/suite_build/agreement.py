"""Acceptability task "agreement" (CoLA/BLiMP kind) from held-out Brown texts, using the gold POS tags.

Rows are ``(sentence, label)``: label "1" = an original Brown sentence, "0" = a *different* Brown sentence
with exactly one agreement token replaced by its number-mismatched partner (case kept: "Is" -> "Are",
"IS" -> "ARE"). The seven word pairs (singular side first) and the gold tags a site must carry exactly
(so ``-hl``/``-tl``/``-nc`` variants, contractions like ``bez*`` and ``that/cs``/``that/wps`` never count):

    is/are (bez/ber)  was/were (bedz/bed)  has/have (hvz/hv)  does/do (doz/do)
    this/these (dt/dts)  that/those (dt/dts)  himself/themselves (ppl/ppls)

Sentence filters (each counted in ``stats["sentences"]``): not a headline (``heads[i]`` False); last token
``.`` ``?`` ``!`` or ``''``; the detokenised text starts with a capital or digit (maybe after a quote or
bracket) and ends with . ? ! (maybe + quote); 6-40 words (``norm``); not a duplicate (``norm``) of a
sentence already taken, in this split or in the train split; no valid site.

Site exclusions (each site is charged to the first rule that fires, ``stats["site_excluded"]``):
  * ``quote-fragment``: the site lies inside a ``` `` ... '' ``` span that does not open at the sentence's
    first token (a quoted fragment embedded in the sentence; direct speech opening the sentence is kept).
  * ``case``: the token is neither lower, Capitalised nor UPPER case (case could not be preserved).
  * ``existential-there`` (verbs): right after (adverbs skipped) or right before existential "there":
    "there is a man and a woman" -> "there are ..." is acceptable, "there's/there was + plural" is common.
  * ``collective-noun`` (verbs): right after (adverbs skipped) a collective noun (bunch, group, family,
    committee, jury, number, majority, ...): "the committee is/are" are both acceptable to many readers.
  * ``partitive-subject`` (verbs): a quantity word + "of" among the 8 previous tokens (percent, half,
    quarter, majority, number, none, either, all, some, most, one, ...): "one-quarter of the visits
    was/were", "either of the proteases has/have".
  * ``conditional-context`` (was/were): an ``if though wish(ed/es) suppose supposing unless lest whether
    imagine pretend`` occurs before the site: "if he was" -> "if he were" (and back) is acceptable.
  * ``subjunctive-were``: "were" right after a singular subject (he/she/it/I or a singular noun, adverbs
    skipped) or right before one (inverted "were he to", "were it not") -- a singular-subject "were".
  * ``infinitive``: have/do tagged hv/do with a modal, ``to`` or a form of *do* among the up to 4 previous
    tokens (adverbs, ``not``, pronouns and nouns skipped; stops at punctuation or any other word): "could
    have", "to do", "did he have"; or right after an object pronoun ("let them have", small clauses).
  * ``subjunctive-have-do``: hv/do right after he/she/it or a singular noun ("insists that he have").
  * ``not-determiner`` (demonstratives): the demonstrative is not followed by (an optional adjective and)
    a noun of its own number (dt + nn, dts + nns) nor directly by a verb that agrees with it (dt + bez bedz
    hvz doz vbz; dts + ber hv do): pronoun uses like "I like these" flip into acceptable sentences.
  * ``invariant-noun``: that noun is one whose number is unclear or which takes either demonstrative
    (kind, sort, type, data, series, species, means, people, ...): "these kind of" is acceptable.
  * ``flip-is-a-source``: the flipped sentence equals (``norm``) a candidate source sentence.

Choice and balance, per split, with ``rng = rng_for(seed, f"agreement:{split}")``:
  1. every kept sentence picks ONE site uniformly at random (``rng.choice``) among its valid sites; its
     group is (pair, word at the site), e.g. ("is/are", "are");
  2. for each pair with groups of sizes A (singular word) and B (plural word), k = min(A, B) // 2;
     each group is shuffled and its first 2k sentences kept (the rest counted as ``balance-dropped``):
     the first k of them stay original (label 1), the next k are flipped (label 0). So every pair has
     four equal cells of k rows -- original sg, original pl, flipped sg->pl, flipped pl->sg -- i.e. the
     labels are 50/50 per pair and overall, both flip directions are equally frequent, and the surface
     word at the site (e.g. "are") appears in k label-1 and k label-0 rows: neither the word at the site
     nor the pair nor the context (label-0 and label-1 rows are drawn from the same groups) predicts the
     label; only the agreement between the site and its context does.
  3. a source sentence is used once (original OR flipped); rows are shuffled.
Train comes from texts whose role is in ``train_roles``, dev from ``dev_roles`` (text-disjoint); train is
built first and dev skips sentences whose ``norm`` is already used by train.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import NamedTuple

from .brown import BrownText, detok, parse_brown_file  # noqa: F401  (tests import it from here too)
from .text import Derived, norm, rng_for

MIN_WORDS, MAX_WORDS = 6, 40

# (singular word, plural word, singular tag, plural tag)
PAIRS = (
    ("is", "are", "bez", "ber"),
    ("was", "were", "bedz", "bed"),
    ("has", "have", "hvz", "hv"),
    ("does", "do", "doz", "do"),
    ("this", "these", "dt", "dts"),
    ("that", "those", "dt", "dts"),
    ("himself", "themselves", "ppl", "ppls"),
)
# word -> (pair name, its partner, the tag the site must carry)
SITE = {}
for _sg, _pl, _tsg, _tpl in PAIRS:
    SITE[_sg] = (f"{_sg}/{_pl}", _pl, _tsg)
    SITE[_pl] = (f"{_sg}/{_pl}", _sg, _tpl)
PAIR_NAMES = tuple(f"{p[0]}/{p[1]}" for p in PAIRS)

_PROSE = re.compile(r"^[\"'(]?[A-Z0-9].*[.!?][\"')]?$")
_CONDITIONAL = {"if", "though", "wish", "wished", "wishes", "wishing", "suppose", "supposing", "unless",
                "lest", "whether", "imagine", "pretend"}
INVARIANT = {"kind", "kinds", "sort", "sorts", "type", "types", "data", "series", "species", "means",
             "people", "sheep", "deer", "fish", "headquarters", "news", "media", "aircraft", "offspring",
             "barracks", "crossroads", "couple", "number", "lot", "lots", "variety", "group", "percent",
             "per", "cent", "dozen", "hundred", "thousand", "million"}
QUANT = {"percent", "cent", "half", "quarter", "third", "thirds", "fourth", "fifth", "majority", "minority",
         "number", "rest", "none", "part", "portion", "fraction", "proportion", "total", "lot", "lots",
         "plenty", "bulk", "remainder", "either", "neither", "any", "all", "some", "most", "each", "one",
         "series", "variety", "kind", "sort", "type", "group", "set", "pair", "couple", "amount", "body",
         "mass", "range", "host", "handful", "dozen", "hundreds", "thousands", "millions"}
COLLECTIVE = {"bunch", "group", "family", "team", "committee", "jury", "crowd", "staff", "government",
              "audience", "public", "couple", "band", "class", "army", "police", "majority", "minority",
              "number", "board", "council", "congress", "party", "company", "firm", "club", "union",
              "population", "faculty", "personnel", "administration", "enemy", "press", "clergy",
              "management", "herd", "flock", "orchestra", "choir", "crew", "gang", "generation", "pair",
              "trio", "quartet", "rest", "remainder", "variety", "series", "total", "data", "media"}
_VERB_TAGS = {"bez", "ber", "bedz", "bed", "hvz", "hv", "doz", "do"}
_DT_VERBS = {"bez", "bedz", "hvz", "doz", "vbz"}
_DTS_VERBS = {"ber", "hv", "do"}
_ADJ = {"jj", "jjr", "jjs", "jjt", "od"}


def recase(template: str, word: str) -> str | None:
    """``word`` in the case of ``template`` (lower, Capitalised, UPPER), or None if that is unclear."""
    if template.islower():
        return word.lower()
    if len(template) > 1 and template.isupper():
        return word.upper()
    if template[0].isupper() and (len(template) == 1 or template[1:].islower()):
        return word[0].upper() + word[1:].lower()
    return None


def quote_open_at(words: list[str]) -> list[int | None]:
    """For every token: the index where the quote span holding it opened (0 for a span continued from a
    previous sentence), or None outside quotes."""
    out, open_at = [], None
    if "''" in words and ("``" not in words or words.index("''") < words.index("``")):
        open_at = 0  # closes a quotation opened in an earlier sentence
    for i, w in enumerate(words):
        if w == "``":
            open_at = i
            out.append(None)
        elif w == "''":
            open_at = None
            out.append(None)
        else:
            out.append(open_at)
    return out


def _is_sg_subject(word: str, tag: str) -> bool:
    return tag in ("pps", "nn", "np") or (tag == "ppss" and word.lower() == "i")


def exclusion(words, tags, i, quote_open) -> str | None:
    """Why the site at ``i`` may not be flipped (a rule name), or None if it may."""
    w, t = words[i].lower(), tags[i]
    n = len(words)
    if quote_open[i] is not None and quote_open[i] > 0:
        return "quote-fragment"
    if recase(words[i], SITE[w][1]) is None:
        return "case"
    if t in _VERB_TAGS:
        j = i - 1
        while j >= 0 and (tags[j].startswith("rb") or tags[j] in ("*", "ql")):
            j -= 1
        if (j >= 0 and tags[j] == "ex") or (i + 1 < n and tags[i + 1] == "ex"):
            return "existential-there"
        if j >= 0 and words[j].lower() in COLLECTIVE:
            return "collective-noun"
        lo = max(0, i - 8)
        if any(words[k].lower() in QUANT and words[k + 1].lower() == "of" for k in range(lo, i - 1)):
            return "partitive-subject"
    if w in ("was", "were"):
        if any(x.lower() in _CONDITIONAL for x in words[:i]):
            return "conditional-context"
    if w == "were":
        j = i - 1
        while j >= 0 and (tags[j].startswith("rb") or tags[j] in ("*", "ql")):
            j -= 1
        if j >= 0 and _is_sg_subject(words[j], tags[j]):
            return "subjunctive-were"
        if i + 1 < n and _is_sg_subject(words[i + 1], tags[i + 1]):
            return "subjunctive-were"
    if t in ("hv", "do"):
        for j in range(i - 1, max(i - 5, -1), -1):
            tj = tags[j]
            if tj.startswith("md") or tj == "to" or tj.startswith("do") or tj.startswith("ppss+md") \
                    or tj.startswith("pps+md"):
                return "infinitive"
            if tj.startswith("rb") or tj in ("*", "ql", "pps", "ppss", "ppo", "np", "nn", "nns", "at", "ex"):
                continue
            break
        if i > 0 and tags[i - 1] in ("ppo", "ppos"):
            return "infinitive"
        if i > 0 and tags[i - 1] in ("pps", "nn", "np"):
            return "subjunctive-have-do"
    if t in ("dt", "dts"):
        j = i + 1
        if j < n and tags[j] in _ADJ:
            j += 1
        nxt = tags[j] if j < n else ""
        noun = "nn" if t == "dt" else "nns"
        verbs = _DT_VERBS if t == "dt" else _DTS_VERBS
        if nxt == noun:
            if words[j].lower() in INVARIANT:
                return "invariant-noun"
        elif not (j == i + 1 and nxt in verbs):
            return "not-determiner"
    return None


def site_exclusions(words: list[str], tags: list[str]) -> list[tuple[int, str | None]]:
    """Every agreement site of a sentence (right word, exact tag): (index, the excluding rule or None)."""
    quote_open = quote_open_at(words)
    out = []
    for i, (w, t) in enumerate(zip(words, tags)):
        site = SITE.get(w.lower())
        if site is not None and t == site[2]:
            out.append((i, exclusion(words, tags, i, quote_open)))
    return out


def flip(words: list[str], i: int) -> list[str]:
    """``words`` with the agreement token at ``i`` replaced by its partner, case kept."""
    _pair, partner, _tag = SITE[words[i].lower()]
    out = list(words)
    out[i] = recase(words[i], partner)
    return out


def shaped_sentences(brown_docs, roles, split_roles, sent_stats: Counter) -> list:
    """The sentences of the texts whose role is in ``split_roles`` that pass the sentence filters of the
    module docstring (headline, ending, prose shape, length; each drop counted in ``sent_stats``), as
    ``(words, tags, text)`` in corpus order (minimal_pairs.py reads the same sentences)."""
    shaped = []  # (words, tags, text)
    for doc in brown_docs:
        if roles.get(doc.doc_id) not in split_roles:
            continue
        for words, head, tags in zip(doc.sents, doc.heads, doc.tags):
            sent_stats["read"] += 1
            if head:
                sent_stats["headline"] += 1
                continue
            if not words or words[-1] not in (".", "?", "!", "''"):
                sent_stats["bad-ending"] += 1
                continue
            text = detok(words)
            if not _PROSE.match(text):
                sent_stats["not-prose"] += 1
                continue
            if not MIN_WORDS <= len(norm(text).split()) <= MAX_WORDS:
                sent_stats["length"] += 1
                continue
            shaped.append((words, tags, text))
    return shaped


def _split_rows(brown_docs, roles, split_roles, rng, used: set, stats: dict):
    sent_stats = Counter()
    sites = _SiteCounts(Counter(), Counter(), Counter())
    # pass 1: sentences of the right shape
    shaped = shaped_sentences(brown_docs, roles, split_roles, sent_stats)
    # pass 2: valid sites, one picked per sentence
    groups = _pick_sites(shaped, used, rng, sent_stats, sites)
    # pass 3: balance -- four equal cells per pair
    rows, group_sizes, dropped, final = _balance(groups, rng)
    stats.update({
        "sentences": dict(sent_stats),
        "site_candidates": {p: sites.candidates[p] for p in PAIR_NAMES},
        "site_tag_mismatch": dict(sorted(sites.tag_mismatch.items())),
        "site_excluded": dict(sorted(sites.excluded.items())),
        "site_excluded_by_rule": dict(sorted(_by_rule(sites.excluded).items())),
        "sentences_per_site_word": group_sizes,
        "balance_dropped": dict(dropped),
        "final_per_cell": dict(sorted(final.items())),
        "labels": dict(sorted(Counter(label for _t, label in rows).items())),
    })
    return rows


class _SiteCounts(NamedTuple):
    candidates: Counter    # pair -> sites with the right word and tag, in kept-shape sentences
    tag_mismatch: Counter  # "word/tag" -> sites whose word is a pair's but whose tag is not
    excluded: Counter      # "pair:rule" -> sites an exclusion rule (or flip-is-a-source) dropped


def _pick_sites(shaped: list, used: set, rng, sent_stats: Counter, sites: _SiteCounts) -> dict:
    """(pair, word) -> [(words, site, text)]: per sentence not used before, one of its valid sites."""
    sources = {norm(text) for _w, _t, text in shaped}
    groups = defaultdict(list)
    for words, tags, text in shaped:
        key = norm(text)
        if key in used:
            sent_stats["duplicate"] += 1
            continue
        valid = _valid_sites(words, tags, sources, sites)
        if not valid:
            sent_stats["no-valid-site"] += 1
            continue
        used.add(key)
        i = rng.choice(valid)
        groups[(SITE[words[i].lower()][0], words[i].lower())].append((words, i, text))
        sent_stats["kept"] += 1
    return groups


def _valid_sites(words: list[str], tags: list[str], sources: set, sites: _SiteCounts) -> list[int]:
    """The sentence's sites with the right tag that no exclusion rule drops and whose flip is no source."""
    quote_open = quote_open_at(words)
    valid = []
    for i, (w, t) in enumerate(zip(words, tags)):
        site = SITE.get(w.lower())
        if site is None:
            continue
        pair, _partner, need = site
        if t != need:
            sites.tag_mismatch[f"{w.lower()}/{t}"] += 1
            continue
        sites.candidates[pair] += 1
        why = exclusion(words, tags, i, quote_open)
        if why is None and norm(detok(flip(words, i))) in sources:
            why = "flip-is-a-source"
        if why is not None:
            sites.excluded[f"{pair}:{why}"] += 1
            continue
        valid.append(i)
    return valid


def _balance(groups: dict, rng) -> tuple[list, dict, Counter, Counter]:
    """Four equal cells per pair (each word as source and as flip): rows (text, label) shuffled; the
    sentences per site word; what the balance dropped per pair; rows per cell."""
    rows, final = [], Counter()
    group_sizes, dropped = {}, Counter()
    for sg, pl, _a, _b in PAIRS:
        pair = f"{sg}/{pl}"
        a, b = groups.get((pair, sg), []), groups.get((pair, pl), [])
        group_sizes[pair] = {sg: len(a), pl: len(b)}
        k = min(len(a), len(b)) // 2
        for word, other, grp in ((sg, pl, a), (pl, sg, b)):
            rng.shuffle(grp)
            dropped[pair] += len(grp) - 2 * k
            for words, _i, text in grp[:k]:
                rows.append((text, "1"))
                final[f"1:{word}"] += 1
            for words, i, _text in grp[k:2 * k]:
                rows.append((detok(flip(words, i)), "0"))
                final[f"0:{word}->{other}"] += 1
    rng.shuffle(rows)
    return rows, group_sizes, dropped, final


def _by_rule(excluded: Counter) -> Counter:
    out = Counter()
    for k, v in excluded.items():
        if ":" in k:
            out[k.split(":", 1)[1]] += v
    return out


def make_agreement(brown_docs, roles, train_roles=("ns-train", "wo-train"), dev_roles=("ns-dev", "wo-dev"),
                   seed=20240601) -> Derived:
    """The agreement task (see the module docstring): ``Derived(train, dev, stats)`` with rows
    ``(sentence, label)`` and ``stats = {"train": {...}, "dev": {...}}``."""
    used: set = set()
    stats = {"train": {}, "dev": {}}
    train = _split_rows(brown_docs, roles, set(train_roles), rng_for(seed, "agreement:train"), used,
                        stats["train"])
    dev = _split_rows(brown_docs, roles, set(dev_roles), rng_for(seed, "agreement:dev"), used, stats["dev"])
    return Derived(train, dev, stats)
