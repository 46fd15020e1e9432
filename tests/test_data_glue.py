"""Task loading: the official GLUE layout (with its quirks), HF parquet, the suite format; bad input."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from electra_bench.data import suite as suite_mod
from electra_bench.data.glue import GLUE_TASKS, PAPER_TASKS
from electra_bench.data.describe import inspect_path, render_inspect
from electra_bench.data.task_sources import load_tasks
from electra_bench.errors import BenchError

MNLI_HEAD = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
             "sentence2_parse\tsentence1\tsentence2")
STSB_HEAD = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
MRPC_HEAD = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"

OFFICIAL = {
    "CoLA/train.tsv": (  # no header; source, label, original mark, sentence
        "gj04\t1\t\tOur friends won't buy this analysis, let alone the next one we propose.\n"
        "gj04\t0\t*\tOne more pseudo generalization and I'm giving up.\n"
        "bc01\t1\t\tThe \"quoted\" word stays.\n"),
    "CoLA/dev.tsv": ("gj04\t1\t\tThe sailors rode the breeze clear of the rocks.\n"
                     "gj04\t0\t*\tThe more we study verbs.\n"),
    "CoLA/test.tsv": "index\tsentence\n0\tBill whistled past the house.\n1\tThe car honked its way.\n",
    "SST-2/train.tsv": "sentence\tlabel\nhide new secretions from the parental units \t0\ncontains no wit \t0\n"
                       "that loves its characters \t1\n",
    "SST-2/dev.tsv": "sentence\tlabel\nit 's a charming and often affecting journey . \t1\nunflinchingly bleak \t0\n",
    "SST-2/test.tsv": "index\tsentence\n0\tuneasy mishmash of styles and genres .\n",
    "MRPC/train.tsv": ("\ufeff" + MRPC_HEAD + "\n"  # download_glue_data.py copies the BOM of msr_paraphrase_train.txt
                       "1\t702876\t702977\tAmrozi accused his brother , whom he called \" the witness \" , of "
                       "deliberately distorting his evidence .\tReferring to him as only \" the witness \" , Amrozi "
                       "accused his brother of deliberately distorting his evidence .\n"
                       "0\t2108705\t2108831\tYucaipa owned Dominick 's before selling the chain .\tYucaipa bought "
                       "Dominick 's in 1995 .\n"),
    "MRPC/dev.tsv": MRPC_HEAD + "\n1\t1355540\t1355592\tHe said the foodservice pie business doesn 't fit .\tThe "
                    "foodservice pie business does not fit .\n",
    "MRPC/test.tsv": "index\t#1 ID\t#2 ID\t#1 String\t#2 String\n0\t1089874\t1089925\tPCCW 's chief operating "
                     "officer .\tCurrent Chief Operating Officer .\n",
    "STS-B/train.tsv": STSB_HEAD + "\tscore\n0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane is "
                       "taking off.\tAn air plane is taking off.\t5.000\n1\tmain-captions\tMSRvid\t2012test\t0004\t"
                       "none\tnone\tA man is playing a large flute.\tA man is playing a flute.\t3.800\n",
    "STS-B/dev.tsv": STSB_HEAD + "\tscore\n0\tmain-captions\tMSRvid\t2012test\t0000\tnone\tnone\tA man with a "
                     "hard hat is dancing.\tA man wearing a hard hat is dancing.\t5.000\n",
    "STS-B/test.tsv": STSB_HEAD + "\n0\tmain-captions\tMSRvid\t2012test\t0024\tnone\tnone\tA girl is styling "
                      "her hair.\tA girl is brushing her hair.\n",
    "QQP/train.tsv": ("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
                      "133273\t213221\t213222\tHow is the life of a math student? Could you describe your own "
                      "experiences?\tWhich level of prepration is enough for the exam jlpt5?\t0\n"
                      "402555\t536040\t536041\tHow do I control my horny emotions?\tHow do you control your "
                      "horniness?\t1\n"
                      "5\t11\t12\tWhat does \"unbalanced mean?\tIs 6\" tall?\t0\n"),  # quotes break CSV quoting
    "QQP/dev.tsv": "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n1\t2\t3\tWhy \"this\"?\tWhy \"that?\t1\n",
    "QQP/test.tsv": "id\tquestion1\tquestion2\n0\tWould the idea of Trump work?\tHow do I find \"x?\n",
    "MNLI/train.tsv": (MNLI_HEAD + "\tlabel1\tgold_label\n"
                       "0\t31193\t31193n\tgovernment\t( ( Conceptually ( cream skimming ) ) ...\t( ( ( Product "
                       "...\t(ROOT (S ...))\t(ROOT (S ...))\tConceptually cream skimming has two basic dimensions - "
                       "product and geography.\tProduct and geography are what make cream skimming work. \tneutral\t"
                       "neutral\n"
                       "1\t101457\t101457e\ttelephone\t( you ...\t( You ...\t(ROOT ...)\t(ROOT ...)\tyou know during "
                       "the season and i guess at at your level uh you lose them \"to the next level\tYou lose the "
                       "things to the following level if the people recall.\tentailment\tentailment\n"),
    "MNLI/dev_matched.tsv": (MNLI_HEAD + "\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label\n"
                             "0\t63735\t63735n\tslate\t( ( The ...\t( The ...\t(ROOT ...)\t(ROOT ...)\tThe new "
                             "rights are nice enough\tEveryone really likes the newest benefits \tneutral\tentailment"
                             "\tneutral\tneutral\tneutral\tneutral\n"),
    "MNLI/dev_mismatched.tsv": (MNLI_HEAD + "\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label\n"
                                "0\t75290\t75290c\tletters\t( ( Your ...\t( ( We ...\t(ROOT ...)\t(ROOT ...)\tYour "
                                "contribution helped make it possible for us to provide our students with a quality "
                                "education.\tYour contributions were of no help with our students' education.\t"
                                "contradiction\tcontradiction\tcontradiction\tcontradiction\tcontradiction\t"
                                "contradiction\n"),
    "MNLI/test_matched.tsv": MNLI_HEAD + "\n0\t31493\t31493\ttravel\t( ( Hierbas ...\t( ( Hierbas ...\t(ROOT ...)\t"
                             "(ROOT ...)\tHierbas, ans seco, ans dulce, and frigola are just a few names.\tHierbas is "
                             "a name worth looking out for.\n",
    "QNLI/train.tsv": "index\tquestion\tsentence\tlabel\n0\tWhen did the third Digimon series begin?\tUnlike the two "
                      "seasons before it, Digimon Tamers takes a darker approach.\tnot_entailment\n1\tWhich missile "
                      "batteries often have individual launchers?\tWhen MANPADS is operated by specialists, batteries "
                      "may have several dozen teams.\tnot_entailment\n2\tWhat two things does Popper argue?\tPopper "
                      "argues the two.\tentailment\n",
    "QNLI/dev.tsv": "index\tquestion\tsentence\tlabel\n0\tWhat came into force after the new constitution?\tThe "
                    "Treaty came into force.\tentailment\n",
    "RTE/train.tsv": "index\tsentence1\tsentence2\tlabel\n0\tNo Weapons of Mass Destruction Found in Iraq Yet.\t"
                     "Weapons of Mass Destruction Found in Iraq.\tnot_entailment\n1\tA place of sorrow, after Pope "
                     "John Paul II died, became a place of celebration.\tPope Benedict XVI is the new leader.\t"
                     "entailment\n",
    "RTE/dev.tsv": "index\tsentence1\tsentence2\tlabel\n0\tDana Reeve died.\tChristopher Reeve had an accident.\t"
                   "not_entailment\n",
    "WNLI/train.tsv": "index\tsentence1\tsentence2\tlabel\n0\tI stuck a pin through a carrot. When I pulled the pin "
                      "out, it had a hole.\tThe carrot had a hole.\t1\n",
    "WNLI/dev.tsv": "index\tsentence1\tsentence2\tlabel\n0\tThe drain is clogged with hair.\tThe hair has to be "
                    "removed.\t0\n",
}


def write_official(root, files=OFFICIAL):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    (root / "MRPC" / "msr_paraphrase_train.txt").write_text("\ufeff" + MRPC_HEAD + "\n", encoding="utf-8")
    return root


@pytest.fixture
def glue_dir(tmp_path):
    return write_official(tmp_path / "glue_data")


def by_name(tasks):
    return {t.spec.name: t for t in tasks}


def test_official_layout_all_tasks(glue_dir):
    tasks = by_name(load_tasks(str(glue_dir)))
    assert list(tasks) == list(PAPER_TASKS)  # WNLI only when asked for
    cola = tasks["cola"]
    assert cola.spec.metrics == ("mcc",) and cola.spec.primary == "mcc"
    assert [e.label for e in cola.splits["train"]] == [1, 0, 1]
    assert cola.splits["train"][2].text_a == 'The "quoted" word stays.' and cola.splits["train"][0].text_b is None
    assert cola.splits["test"][0].text_a == "Bill whistled past the house." and cola.splits["test"][0].label is None
    assert tasks["sst2"].splits["train"][0].text_a == "hide new secretions from the parental units "
    assert tasks["sst2"].splits["test"][0].label is None
    mrpc = tasks["mrpc"]
    assert mrpc.spec.metrics == ("accuracy", "f1")
    assert mrpc.splits["train"][0].text_a.startswith("Amrozi") and mrpc.splits["train"][0].label == 1
    assert mrpc.splits["test"][0].text_b == "Current Chief Operating Officer ."
    stsb = tasks["stsb"]
    assert stsb.spec.regression and stsb.spec.labels is None and stsb.spec.metrics == ("spearman", "pearson")
    assert [e.label for e in stsb.splits["train"]] == [5.0, 3.8] and isinstance(stsb.splits["train"][1].label, float)
    assert stsb.splits["test"][0].label is None
    qqp = tasks["qqp"].splits
    assert qqp["train"][2].text_a == 'What does "unbalanced mean?' and qqp["train"][2].text_b == 'Is 6" tall?'
    assert qqp["dev"][0].text_b == 'Why "that?' and qqp["test"][0].text_b == 'How do I find "x?'
    mnli = tasks["mnli"]
    assert mnli.spec.eval_splits == ("dev_matched", "dev_mismatched")
    assert set(mnli.splits) == {"train", "dev_matched", "dev_mismatched", "test_matched"}
    labels = mnli.spec.labels
    assert [labels[e.label] for e in mnli.splits["train"]] == ["neutral", "entailment"]
    assert '"to the next level' in mnli.splits["train"][1].text_a
    assert labels[mnli.splits["dev_mismatched"][0].label] == "contradiction"
    assert mnli.splits["dev_matched"][0].text_b == "Everyone really likes the newest benefits "
    qnli = tasks["qnli"]
    assert [qnli.spec.labels[e.label] for e in qnli.splits["train"]] == ["not_entailment"] * 2 + ["entailment"]
    assert tasks["rte"].spec.labels == ("entailment", "not_entailment") and tasks["rte"].splits["dev"][0].label == 1


def test_names_select_and_alias(glue_dir):
    tasks = load_tasks(str(glue_dir), ["RTE", "SST-2", "wnli", "sts-b"])
    assert [t.spec.name for t in tasks] == ["rte", "sst2", "wnli", "stsb"]
    assert [e.label for e in tasks[2].splits["train"]] == [1]


def test_a_single_task_directory(glue_dir):
    tasks = load_tasks(str(glue_dir / "RTE"))
    assert [t.spec.name for t in tasks] == ["rte"]


def test_mrpc_rebuilt_from_msr_files_and_dev_ids(glue_dir):
    d = glue_dir / "MRPC"
    (d / "train.tsv").unlink()
    (d / "dev.tsv").unlink()
    rows = ["1\t1\t2\tFirst a .\tFirst b .", "0\t3\t4\tSecond a .\tSecond b .", "1\t5\t6\tThird a .\tThird b ."]
    (d / "msr_paraphrase_train.txt").write_text("\ufeff" + MRPC_HEAD + "\n" + "\n".join(rows) + "\n")
    (d / "dev_ids.tsv").write_text("3\t4\n")
    mrpc = load_tasks(str(glue_dir), ["mrpc"])[0]
    assert [e.text_a for e in mrpc.splits["train"]] == ["First a .", "Third a ."]
    assert [(e.text_a, e.label) for e in mrpc.splits["dev"]] == [("Second a .", 0)]
    (d / "dev_ids.tsv").unlink()
    with pytest.raises(BenchError, match="dev_ids.tsv: missing"):
        load_tasks(str(glue_dir), ["mrpc"])


def _edit(glue_dir, rel, text):
    (glue_dir / rel).write_text(text, encoding="utf-8")


@pytest.mark.parametrize("rel,text,names,match", [
    ("RTE/dev.tsv", None, ["rte"], r"RTE/dev.tsv: missing file"),
    ("MNLI/dev_mismatched.tsv", None, ["mnli"], r"MNLI/dev_mismatched.tsv: missing file"),
    ("SST-2/train.tsv", "text\tlabel\nfoo\t1\n", ["sst2"], r"SST-2/train.tsv:1: no column 'sentence' \(columns: "
                                                           r"text, label\)"),
    ("RTE/train.tsv", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\tc\td\tmaybe\n", ["rte"],
     r"RTE/train.tsv:3: label 'maybe' is not one of entailment, not_entailment"),
    ("CoLA/train.tsv", "gj04\t1\t\tFine.\ngj04\t2\t\tTwo is not a label.\n", ["cola"],
     r"CoLA/train.tsv:2: label '2' is not one of 0, 1"),
    ("QQP/train.tsv", "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n1\t2\t3\ta?\tb?\t0\n4\t5\t6\tc?\t1\n",
     ["qqp"], r"QQP/train.tsv:3: 5 tab-separated fields, expected 6 \(id, qid1"),
    ("CoLA/dev.tsv", "gj04\t1\tNo mark column.\n", ["cola"], r"CoLA/dev.tsv:1: 3 tab-separated fields, expected 4"),
    ("STS-B/train.tsv", STSB_HEAD + "\tscore\n0\tg\tf\t2012\t1\tn\tn\tA.\tB.\tfive\n", ["stsb"],
     r"STS-B/train.tsv:2: score 'five' is not a number"),
    ("STS-B/dev.tsv", STSB_HEAD + "\tscore\n0\tg\tf\t2012\t1\tn\tn\tA.\tB.\t7.5\n", ["stsb"],
     r"STS-B/dev.tsv:2: score '7.5' is outside \[0, 5\]"),
    ("WNLI/dev.tsv", "index\tsentence1\tsentence2\tlabel\n", ["wnli"], r"WNLI/dev.tsv: no examples"),
    ("QNLI/train.tsv", "", ["qnli"], r"QNLI/train.tsv:1: empty file; expected a header row"),
])
def test_bad_official_input(glue_dir, rel, text, names, match):
    if text is None:
        (glue_dir / rel).unlink()
    else:
        _edit(glue_dir, rel, text)
    with pytest.raises(BenchError, match=match):
        load_tasks(str(glue_dir), names)


def test_bad_names_and_sources(glue_dir, tmp_path):
    with pytest.raises(BenchError, match="unknown GLUE task 'squad'"):
        load_tasks(str(glue_dir), ["squad"])
    shutil.rmtree(glue_dir / "QQP")
    with pytest.raises(BenchError, match=r"QQP: missing task directory for QQP"):
        load_tasks(str(glue_dir), ["qqp"])
    assert "qqp" not in by_name(load_tasks(str(glue_dir)))  # a partial GLUE dir loads what it has
    (tmp_path / "random").mkdir()
    with pytest.raises(BenchError, match="random: not a task directory"):
        load_tasks(str(tmp_path / "random"))
    with pytest.raises(BenchError, match="nope: no such directory"):
        load_tasks(str(tmp_path / "nope"))


def test_non_utf8_task_file(glue_dir):
    (glue_dir / "RTE" / "train.tsv").write_bytes(b"index\tsentence1\tsentence2\tlabel\n0\tcaf\xe9\tb\tentailment\n")
    with pytest.raises(BenchError, match=r"RTE/train.tsv:2: invalid UTF-8"):
        load_tasks(str(glue_dir), ["rte"])


def test_inspect_glue_dir(glue_dir):
    info = inspect_path(str(glue_dir))
    assert info["kind"] == "tasks" and info["layout"] == "glue"
    tasks = {t["name"]: t for t in info["tasks"]}
    assert "wnli" in tasks  # inspect shows everything present
    sst = tasks["sst2"]["splits"]["train"]
    assert sst["examples"] == 3 and sst["label_counts"] == {"0": 2, "1": 1}
    assert sst["label_balance"] == {"0": round(2 / 3, 4), "1": round(1 / 3, 4)}
    assert set(sst["length_words"]) == {"count", "mean", "p50", "p90", "p99", "max"}
    assert tasks["stsb"]["splits"]["train"]["score"]["max"] == 5.0
    assert tasks["cola"]["splits"]["test"]["labeled"] == 0
    json.dumps(info)
    from rich.console import Console

    console = Console(record=True, width=120)
    console.print(render_inspect(info))
    assert "mnli" in console.export_text()


# -- HF parquet layout ------------------------------------------------------------------------------


def _write_parquet(path, columns):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)


@pytest.fixture
def parquet_dir(tmp_path):
    pytest.importorskip("pyarrow")
    root = tmp_path / "glue"
    _write_parquet(root / "cola" / "train-00000-of-00001.parquet",
                   {"sentence": ["Fine.", "Bad bad."], "label": [1, 0], "idx": [0, 1]})
    _write_parquet(root / "cola" / "validation-00000-of-00001.parquet",
                   {"sentence": ["Ok."], "label": [1], "idx": [0]})
    _write_parquet(root / "cola" / "test-00000-of-00001.parquet", {"sentence": ["?"], "label": [-1], "idx": [0]})
    _write_parquet(root / "stsb" / "train-00000-of-00002.parquet",
                   {"sentence1": ["a"], "sentence2": ["b"], "label": [4.25], "idx": [0]})
    _write_parquet(root / "stsb" / "train-00001-of-00002.parquet",
                   {"sentence1": ["c"], "sentence2": ["d"], "label": [0.5], "idx": [1]})
    _write_parquet(root / "stsb" / "validation-00000-of-00001.parquet",
                   {"sentence1": ["e"], "sentence2": ["f"], "label": [2.0], "idx": [0]})
    mnli = {"premise": ['He said "hi'], "hypothesis": ["h"], "label": [2], "idx": [0]}
    _write_parquet(root / "mnli" / "train-00000-of-00001.parquet", mnli)
    _write_parquet(root / "mnli" / "validation_matched" / "0000.parquet", mnli)  # refs/convert/parquet layout
    _write_parquet(root / "mnli" / "glue-validation_mismatched.parquet", mnli)  # older naming
    _write_parquet(root / "mnli" / "test_matched-00000-of-00001.parquet", {**mnli, "label": [-1]})
    return root


def test_hf_parquet_layout(parquet_dir):
    tasks = by_name(load_tasks(str(parquet_dir)))
    assert list(tasks) == ["cola", "stsb", "mnli"]
    cola = tasks["cola"].splits
    assert [(e.text_a, e.label) for e in cola["train"]] == [("Fine.", 1), ("Bad bad.", 0)]
    assert cola["test"][0].label is None and set(cola) == {"train", "dev", "test"}
    assert [e.label for e in tasks["stsb"].splits["train"]] == [4.25, 0.5]  # both shards, in order
    mnli = tasks["mnli"]
    assert set(mnli.splits) == {"train", "dev_matched", "dev_mismatched", "test_matched"}
    ex = mnli.splits["dev_mismatched"][0]
    assert (ex.text_a, ex.text_b, mnli.spec.labels[ex.label]) == ('He said "hi', "h", "contradiction")
    assert inspect_path(str(parquet_dir))["layout"] == "hf_parquet"


def test_bad_parquet_input(parquet_dir):
    _write_parquet(parquet_dir / "cola" / "train-00000-of-00001.parquet",
                   {"sentence": ["a", "b"], "label": [1, 7], "idx": [0, 1]})
    with pytest.raises(BenchError, match=r"train-00000-of-00001.parquet: row 1: label 7 is not a class index"):
        load_tasks(str(parquet_dir), ["cola"])
    _write_parquet(parquet_dir / "cola" / "train-00000-of-00001.parquet", {"text": ["a"], "label": [1]})
    with pytest.raises(BenchError, match=r"train-00000-of-00001.parquet: no column 'sentence'"):
        load_tasks(str(parquet_dir), ["cola"])
    (parquet_dir / "stsb" / "validation-00000-of-00001.parquet").unlink()
    with pytest.raises(BenchError, match=r"stsb/validation-00000-of-00001.parquet: missing dev split"):
        load_tasks(str(parquet_dir), ["stsb"])


def test_hf_glue_without_datasets(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(BenchError, match=r"electra-bench\[hf\]"):
        load_tasks("hf:glue", ["rte"])


# -- the suite format -------------------------------------------------------------------------------

SUITE_TASKS = [
    {"name": "rt-polarity", "text_fields": ["sentence"], "labels": ["0", "1"], "regression": False,
     "metrics": ["accuracy"], "primary": "accuracy", "description": "d", "source": "s", "license": "l"},
    {"name": "pairs", "text_fields": ["sentence1", "sentence2"], "labels": ["no", "yes", "maybe"],
     "regression": False, "metrics": ["accuracy", "f1"], "primary": "accuracy", "description": "", "source": "",
     "license": ""},
    {"name": "sim", "text_fields": ["sentence1", "sentence2"], "labels": None, "regression": True,
     "metrics": ["spearman", "pearson"], "primary": "spearman", "description": "", "source": "", "license": ""},
]


def write_suite(root, tasks=SUITE_TASKS):
    root.mkdir(parents=True, exist_ok=True)
    import lzma

    with lzma.open(root / "corpus.txt.xz", "wt", encoding="utf-8") as f:
        f.write("Some prose here.\nMore prose.\n\nAnother document.\n")
    (root / "suite.json").write_text(json.dumps({"name": "mini", "version": 1, "corpus": "corpus.txt.xz",
                                                 "tasks": tasks}))
    data = {
        "rt-polarity": ("sentence\tlabel\n", ["a gripping \"film\t1", "dull\t0"]),
        "pairs": ("sentence1\tsentence2\tlabel\n", ["a\tb\tyes", "c\td\tmaybe", "e\tf\tno"]),
        "sim": ("sentence1\tsentence2\tlabel\n", ["a\tb\t0.5", "c\td\t4"]),
    }
    for name, (head, rows) in data.items():
        for split in ("train", "dev"):
            (root / name).mkdir(exist_ok=True)
            with gzip.open(root / name / f"{split}.tsv.gz", "wt", encoding="utf-8") as f:
                f.write(head + "\n".join(rows) + "\n")
    return root


def test_suite_tasks(tmp_path, monkeypatch):
    root = write_suite(tmp_path / "suite")
    tasks = by_name(load_tasks(str(root)))
    assert list(tasks) == ["rt-polarity", "pairs", "sim"]
    rt = tasks["rt-polarity"]
    assert rt.spec.eval_splits == ("dev",) and set(rt.splits) == {"train", "dev"}
    assert [(e.text_a, e.text_b, e.label) for e in rt.splits["train"]] == [('a gripping "film', None, 1),
                                                                           ("dull", None, 0)]
    assert [e.label for e in tasks["pairs"].splits["dev"]] == [1, 2, 0]
    assert tasks["sim"].spec.regression and [e.label for e in tasks["sim"].splits["train"]] == [0.5, 4.0]
    monkeypatch.setattr(suite_mod, "suite_dir", lambda name=None: root)
    assert [t.spec.name for t in load_tasks(None, ["sim", "RT-Polarity"])] == ["sim", "rt-polarity"]
    with pytest.raises(BenchError, match="no task 'cola'"):
        load_tasks(None, ["cola"])
    info = inspect_path(None)
    assert info["kind"] == "suite" and info["corpus"]["documents"] == 2 and len(info["tasks"]) == 3


def test_bad_suite_input(tmp_path):
    root = write_suite(tmp_path / "suite")
    with gzip.open(root / "pairs" / "train.tsv.gz", "wt") as f:
        f.write("sentence1\tsentence2\tlabel\na\tb\tperhaps\n")
    with pytest.raises(BenchError, match=r"pairs/train.tsv.gz:2: label 'perhaps' is not one of no, yes, maybe"):
        load_tasks(str(root), ["pairs"])
    (root / "sim" / "dev.tsv.gz").unlink()
    with pytest.raises(BenchError, match=r"sim/dev.tsv.gz: missing dev split of task 'sim'"):
        load_tasks(str(root), ["sim"])
    bad = [dict(SUITE_TASKS[0], primary="mcc")]
    write_suite(tmp_path / "s2", bad)
    with pytest.raises(BenchError, match=r"suite.json: task 'rt-polarity': primary 'mcc' is not one of its metrics"):
        load_tasks(str(tmp_path / "s2"))
    (tmp_path / "s3").mkdir()
    (tmp_path / "s3" / "suite.json").write_text('{"name": "x", "version": 1, "tasks": []}')
    with pytest.raises(BenchError, match=r"suite.json: missing key 'corpus'"):
        load_tasks(str(tmp_path / "s3"))


def test_registry_is_the_papers_glue():
    assert PAPER_TASKS == ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte")
    assert GLUE_TASKS["stsb"].spec.primary == "spearman" and GLUE_TASKS["cola"].spec.primary == "mcc"
    assert all(GLUE_TASKS[n].spec.primary == "accuracy" for n in ("sst2", "mrpc", "qqp", "mnli", "qnli", "rte"))


def test_embedded_suite_if_present():
    if not (suite_mod.suite_dir() / "suite.json").is_file():
        pytest.skip("the embedded suite is not built")
    suite = suite_mod.load_suite()
    tasks = load_tasks(None)
    assert [t.spec.name for t in tasks] == [t.name for t in suite.tasks]
    for t in tasks:
        assert t.splits["train"] and t.splits["dev"] and t.spec.eval_splits == ("dev",)
        assert all(e.label is not None for e in t.splits["dev"])
    assert suite.corpus.is_file()
