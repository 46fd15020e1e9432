"""The import graph follows docs/architecture.md: a stage imports only its own and lower stages, no
module-level import cycle, no module named like a standard-library module, and no private name used
across modules. Read from the source (ast), so a function-local import counts too."""

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "electra_bench"

# stage -> rank: a module may import modules of its own rank or lower (docs/architecture.md)
STAGES = {
    "electra_bench": 0, "electra_bench.errors": 0, "electra_bench.special_tokens": 0, "electra_bench.choices": 0,
    "electra_bench.units": 0, "electra_bench.store": 0,
    "electra_bench.data": 1,
    "electra_bench.model": 2, "electra_bench.model_config": 2, "electra_bench.presets": 2, "electra_bench.run_config": 2,
    "electra_bench.objectives": 3,
    "electra_bench.flops": 4,
    "electra_bench.pretrain": 5,
    "electra_bench.interop": 6,
    "electra_bench.score": 7,
    "electra_bench.summarise": 8,
    "electra_bench.present": 9,
    "electra_bench.ci": 10,
    "electra_bench.experiments": 11,
    "electra_bench.cli": 12, "electra_bench.__main__": 12,
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def rank(module: str) -> int:
    """The stage of a module: its longest prefix in STAGES."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in STAGES:
            return STAGES[".".join(parts[:n])]
    raise KeyError(module)


def _imports(path: Path, module: str) -> list[tuple[str, int, bool, list[str]]]:
    """(imported module, line, at module level, names) for every electra_bench import in the file."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    top_level = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            target, names = node.names[0].name, []
        else:
            continue
        if target.split(".")[0] != "electra_bench":
            continue
        # `from . import x` / `from .pkg import mod`: the imported thing may itself be a module
        for name in names or [None]:
            full = f"{target}.{name}" if name and _is_module(f"{target}.{name}") else target
            out.append((full, node.lineno, id(node) in top_level, [name] if name else []))
    return out


def _is_module(name: str) -> bool:
    p = PACKAGE.parent.joinpath(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _all_modules():
    return [(p, _module_name(p)) for p in sorted(PACKAGE.rglob("*.py"))]


def test_every_module_has_a_stage():
    for _, module in _all_modules():
        rank(module)  # KeyError names a module that docs/architecture.md does not place


def test_no_lower_stage_imports_a_higher_one():
    bad = []
    for path, module in _all_modules():
        for target, line, _, _ in _imports(path, module):
            if rank(target) > rank(module):
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} (stage {rank(module)}) "
                           f"imports {target} (stage {rank(target)})")
    assert not bad, "\n".join(bad)


def test_no_module_level_import_cycle():
    graph: dict[str, set[str]] = {m: set() for _, m in _all_modules()}
    for path, module in _all_modules():
        for target, _, top, _ in _imports(path, module):
            if top and target in graph and target != module and not module.startswith(target + "."):
                graph[module].add(target)
    state: dict[str, int] = {}

    def visit(m, stack):
        state[m] = 1
        for t in graph[m]:
            if state.get(t) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(t):] + [m, t]))
            if t not in state:
                visit(t, stack + [m])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [])


def test_no_module_shadows_the_standard_library():
    shadowing = [m for _, m in _all_modules() if m.rsplit(".", 1)[-1] in sys.stdlib_module_names]
    assert not shadowing, shadowing


def test_no_private_name_is_imported_across_modules():
    bad = []
    for path, module in _all_modules():
        for target, line, _, names in _imports(path, module):
            bad += [f"{path.relative_to(PACKAGE.parent)}:{line}: {n} from {target}" for n in names
                    if n.startswith("_") and not n.startswith("__")]
    assert not bad, "\n".join(bad)


def test_the_checker_resolves_relative_and_local_imports():
    """The checker itself: relative imports resolve to modules, function-local ones are seen."""
    found = {(t, top) for t, _, top, _ in _imports(PACKAGE / "pretrain" / "run_dir.py", "electra_bench.pretrain.run_dir")}
    assert ("electra_bench.store.layout", True) in found and ("electra_bench.pretrain.checkpoint", True) in found
    found = {(t, top) for t, _, top, _ in _imports(PACKAGE / "cli" / "experiment.py", "electra_bench.cli.experiment")}
    assert ("electra_bench.experiments.compare", False) in found  # imported inside the command
    assert rank("electra_bench.summarise.summary") > rank("electra_bench.pretrain.trainer")
