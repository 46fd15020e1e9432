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

from .agreement import shaped_sentences
from .brown import detok
from .pair_sites import FAMILIES, apply, sentence_options, surface_pair
from .text import norm, rng_for

ROLES = ("ns-train", "ns-dev", "wo-train", "wo-dev")
CAP = 1500  # pairs per family at most (each word pair scaled down alike, so the balance holds)


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
    cands = _candidates(shaped)
    chosen = {f: (_choose_anaphor if f == "pairs-anaphor" else _choose)(cands.per[f],
                                                                        rng_for(seed, f"minimal-pairs:{f}"))
              for f in FAMILIES}
    removed, dropped = _corpus_checks(chosen, check)
    tasks, stats = {}, {}
    for f in FAMILIES:
        rows, balance_dropped, cap_dropped, final = _balance(f, chosen[f], dropped,
                                                             rng_for(seed, f"minimal-pairs:{f}:balance"))
        tasks[f] = rows
        stats[f] = {
            "texts": list(split_roles),
            "sentences": dict(sent_stats),
            "site_candidates": dict(sorted(cands.sites[f].items())),
            "site_excluded": dict(sorted(cands.excluded[f].items())),
            "site_excluded_by_rule": dict(sorted(_by_rule(cands.excluded[f]).items())),
            "duplicate_sentences": cands.dup[f],
            "sentences_with_a_pair": len(chosen[f]),
            "removed_by_checks": dict(sorted(removed[f].items())),
            "balance_dropped": dict(sorted(balance_dropped.items())),
            "cap_dropped": dict(sorted(cap_dropped.items())),
            "final_per_paradigm": dict(sorted(final.items())),
            "pairs": len(rows),
        }
    return Built(tasks, stats)


class _Candidates(NamedTuple):
    per: dict       # family -> [(words, text, [options])], one entry per sentence
    sites: dict     # family -> Counter of candidate sites per word pair (attractor: per pattern)
    excluded: dict  # family -> Counter of "pattern:rule" exclusions
    dup: Counter    # family -> sentences seen before


def _candidates(shaped: list) -> _Candidates:
    """Each family's sentences with their options, less those whose flip is a source sentence."""
    sources = {norm(text) for _w, _t, text in shaped}
    c = _Candidates({f: [] for f in FAMILIES}, {f: Counter() for f in FAMILIES}, {f: Counter() for f in FAMILIES},
                    Counter())
    seen = {f: set() for f in FAMILIES}
    for words, tags, text in shaped:
        key = norm(text)
        found = sentence_options(words, tags)
        for f, (opts, ex) in found.items():
            c.excluded[f].update(ex)
            for o in opts:
                c.sites[f][o.paradigm.split(":")[0] if f != "pairs-attractor" else o.pattern] += 1
            kept = []
            for o in opts:
                if norm(detok(apply(words, o))) in sources:
                    c.excluded[f][f"{o.paradigm.split(':')[0]}:flip-is-a-source"] += 1
                else:
                    kept.append(o)
            if not kept:
                continue
            if key in seen[f]:
                c.dup[f] += 1
                continue
            seen[f].add(key)
            c.per[f].append((words, text, kept))
    return c


def _corpus_checks(chosen: dict, check) -> tuple[dict, set]:
    """The corpus checks, one call for every family's candidates: what they removed per family (counts by
    reason), and the (family, index) of each removed candidate."""
    flat = [(f, n) for f in FAMILIES for n in range(len(chosen[f]))]
    pairs = [(chosen[f][n][1], detok(apply(chosen[f][n][0], chosen[f][n][2]))) for f, n in flat]
    verdicts = check(pairs) if check is not None else [None] * len(pairs)
    removed = {f: Counter() for f in FAMILIES}
    dropped = set()
    for (f, n), why in zip(flat, verdicts):
        if why:
            removed[f][why] += 1
            dropped.add((f, n))
    return removed, dropped


def _balance(f: str, chosen: list, dropped: set, rng) -> tuple[list, Counter, Counter, Counter]:
    """One family's rows: per surface word pair as many with either word in the good sentence, scaled down
    alike to CAP; what balance and cap dropped per word pair; rows per paradigm."""
    groups = defaultdict(list)  # (good word, bad word) as written -> rows
    for n, (words, text, opt) in enumerate(chosen):
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
    return rows, balance_dropped, cap_dropped, final


def _by_rule(excluded: Counter) -> Counter:
    out = Counter()
    for k, v in excluded.items():
        out[k.split(":", 1)[1]] += v
    return out
