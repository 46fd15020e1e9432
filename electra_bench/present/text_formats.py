"""The text formats every report renders to (`FORMATS`), the Markdown and LaTeX (booktabs) table
writers they share (the terminal table is rich's, the CSV pandas'); FLOP counts are written by
units.fmt_flops."""

from __future__ import annotations

from ..units import fmt_flops  # noqa: F401  (the reports' FLOP format, one definition

FORMATS = ("table", "md", "csv", "latex")


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    def esc(c: str) -> str:
        return c.replace("|", "\\|")

    out = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def _latex_escape(text: str) -> str:
    text = "".join(_LATEX_SPECIAL.get(c, c) for c in text)
    return text.replace("±", r"$\pm$")


def latex_table(header: list[str], rows: list[list[str]], notes: list[str]) -> str:
    cols = "l" * 1 + "r" * (len(header) - 1)
    out = [r"% requires \usepackage{booktabs}", rf"\begin{{tabular}}{{{cols}}}", r"\toprule",
           " & ".join(_latex_escape(h) for h in header) + r" \\", r"\midrule"]
    out += [" & ".join(_latex_escape(c) for c in row) + r" \\" for row in rows]
    out += [r"\bottomrule", r"\end{tabular}"]
    out += ["% " + n for n in notes]
    return "\n".join(out)
