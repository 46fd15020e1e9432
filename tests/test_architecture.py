"""The import graph follows docs/architecture.md: a stage imports only its own and lower stages, no
module-level import cycle, no module named like a standard-library module, and no private name used
across modules. Read from the source (ast), so a function-local import counts too. And the house stays
walkable (issue 49): no import circle at all in the package, scripts/ and benchmarks/ (function-local
imports included), no module over 400 lines (a cli module over 300), no function body over 60 lines."""

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


# --- issue 49: no import circle (function-local imports count too), no module over 400 lines (a cli module
# over 300), no function body over 60 lines

REPO = PACKAGE.parent
MAX_MODULE_LINES = 400
MAX_CLI_MODULE_LINES = 300
MAX_FUNCTION_BODY_LINES = 60


def _tree_modules(root: Path) -> dict[str, Path]:
    """Every module under `root` by its dotted name as imported from `root`'s parent (the package) or from
    `root` itself on sys.path (scripts/, benchmarks/: `import stat_designs`)."""
    base = root.parent if root == PACKAGE else root
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _all_imports(path: Path, module: str, modules: dict[str, Path]) -> set[str]:
    """The modules of `modules` that the file imports anywhere (module level or inside a function)."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            candidates = [f"{target}.{a.name}" for a in node.names] + [target]
        elif isinstance(node, ast.Import):
            candidates = [a.name for a in node.names]
        else:
            continue
        for name in candidates:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module and not module.startswith(name + "."):  # a package's own __init__
                found.add(name)
                break
    return found


def _circles(*roots: Path) -> set[tuple[str, ...]]:
    """Each import circle among the modules under `roots` together, as its members sorted (strongly connected
    components): a script importing the package that imports it back is a circle too."""
    modules = {name: path for root in roots for name, path in _tree_modules(root).items()}
    graph = {m: _all_imports(p, m, modules) for m, p in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = set()

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                found.add(tuple(sorted(members)))

    for m in graph:
        if m not in index:
            connect(m)
    return found


def _long_functions(root: Path, base: Path = REPO) -> dict[str, int]:
    """'path:function' -> its body's lines (first statement to last, docstring included) where over the limit."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.body[-1].end_lineno - node.body[0].lineno + 1
                if lines > MAX_FUNCTION_BODY_LINES:
                    out[f"{path.relative_to(base)}:{node.name}"] = lines
    return out


def test_no_import_circle_in_the_package():
    assert not _circles(PACKAGE), _circles(PACKAGE)


def test_no_import_circle_in_scripts_and_benchmarks():
    """Within scripts/ (benchmarks/) or through the package they import."""
    assert not _circles(PACKAGE, REPO / "scripts"), _circles(PACKAGE, REPO / "scripts")
    assert not _circles(PACKAGE, REPO / "benchmarks"), _circles(PACKAGE, REPO / "benchmarks")


def test_no_module_over_its_size():
    over = {}
    for module, path in _tree_modules(PACKAGE).items():
        limit = MAX_CLI_MODULE_LINES if module.startswith("electra_bench.cli.") else MAX_MODULE_LINES
        n = len(path.read_text().splitlines())
        if n > limit:
            over[str(path.relative_to(REPO))] = f"{n} lines (at most {limit})"
    assert not over, over


def test_no_function_body_over_60_lines_in_the_package():
    assert not _long_functions(PACKAGE), _long_functions(PACKAGE)


def test_no_function_body_over_60_lines_in_scripts():
    assert not _long_functions(REPO / "scripts"), _long_functions(REPO / "scripts")


def test_the_checks_see_a_circle_a_long_function_and_a_big_module(tmp_path):
    """The checkers themselves, on a made-up tree: a lazy import closes a circle, a 61-line body is long."""
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def f():\n    import a\n" + "    x = 1\n" * 60)
    assert _circles(tmp_path) == {("a", "b")}
    assert _long_functions(tmp_path, tmp_path) == {"b.py:f": 61}
    (tmp_path / "b.py").write_text("def f():\n" + "    x = 1\n" * 60)
    assert not _circles(tmp_path) and not _long_functions(tmp_path, tmp_path)
    (tmp_path / "lib").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / "lib" / "core.py").write_text("def build():\n    import tool\n")  # a library calling its script back
    (tmp_path / "tools" / "tool.py").write_text("import core\n")
    assert _circles(tmp_path / "lib", tmp_path / "tools") == {("core", "tool")}
