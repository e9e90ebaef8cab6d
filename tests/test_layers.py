"""The package's layers, read from the imports of every module (ast; nothing is imported).

    games/    the rules: imports nothing from azjax
    search/   tree search over a game: imports games/ only
    methods/  the loop's seams and the papers' methods: games/, search/ and the replay only
    network.py, replay.py, hosts.py, compile_cache.py, compile_log.py, config.py (pure leaves): no azjax import but
              the games registry (config)
    build.py  the composition root: Config -> components; the one model loader
    train/, play/, engines/  built on the above (train/bench.py: the speed bench, beside the loop it times)
    cli/      argparse and printing, the top layer: no module outside it imports it, not even inside a function
Training (train/) never imports the engines (engines/), not even through the modules it imports. The test
harnesses (fuzzers, the kill soak, the compile watch) are not in the package: they live in lab/reliability/.

No import circles, and no azjax import inside a function body (the usual way to dodge a circle), except in
cli/ (which imports a subcommand's machinery only when that subcommand runs, to start fast), the lazy
public API of `azjax/__init__.py` and `azjax/engines/loading.py` (which imports the network and search modules
in a background thread, so that GTP and UCI answer the handshake before they are loaded, as lc0 does).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "azjax"

# module prefix -> the azjax module prefixes it may import (its own prefix is always allowed)
ALLOWED: dict[str, tuple[str, ...]] = {
    "azjax.games": (),
    "azjax.search": ("azjax.games",),
    "azjax.methods": ("azjax.games", "azjax.search", "azjax.replay"),
    "azjax.network": (),
    "azjax.replay": (),
    "azjax.config": ("azjax.games",),
    "azjax.hosts": (),
    "azjax.compile_cache": (),
    "azjax.compile_log": (),
}
# modules whose function bodies may import azjax (see the docstring)
LAZY_OK = ("azjax.cli", "azjax", "azjax.engines.loading")


def _module_name(file: Path) -> str:
    parts = list(file.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    """The absolute module an `ImportFrom` names (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@functools.cache
def _imports(file: Path) -> list[tuple[str, bool, int]]:
    """(imported azjax module, inside a function body?, line) for every azjax import of `file`."""
    module = _module_name(file)
    tree = ast.parse(file.read_text(), filename=str(file))
    found: list[tuple[str, bool, int]] = []

    def visit(node: ast.AST, in_function: bool, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            checking = type_checking or (isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test))
            if isinstance(child, ast.Import):
                found.extend((a.name, in_function, child.lineno) for a in child.names if a.name.startswith("azjax"))
            elif isinstance(child, ast.ImportFrom) and not checking:
                target = _resolve(module, child, file.name == "__init__.py")
                if target == "azjax" or target.startswith("azjax."):
                    # `from azjax.methods import sai` imports the module azjax.methods.sai
                    names = [f"{target}.{a.name}" if _is_module(f"{target}.{a.name}") else target for a in child.names]
                    found.extend((n, in_function, child.lineno) for n in names)
            visit(child, inner, checking)

    visit(tree, False, False)
    return found


def _is_module(name: str) -> bool:
    path = ROOT.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


MODULES = {(_module_name(f)): f for f in sorted(ROOT.rglob("*.py"))}


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_every_folder_is_a_package() -> None:
    for folder in [p for p in ROOT.rglob("*") if p.is_dir() and p.name != "__pycache__"]:
        assert (folder / "__init__.py").exists(), f"{folder} has no __init__.py"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_imports_only_its_lower_layers(module: str) -> None:
    rules = [(p, allowed) for p, allowed in ALLOWED.items() if _under(module, p)]
    for target, _, line in _imports(MODULES[module]):
        for prefix, allowed in rules:
            ok = _under(target, prefix) or any(_under(target, a) for a in allowed)
            assert ok, f"{module}:{line} imports {target}; {prefix} may import only {allowed or 'nothing'} from azjax"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_nothing_outside_the_command_line_imports_it(module: str) -> None:
    """cli/ is the top layer: no module outside azjax/cli imports azjax.cli, not even inside a function (what the
    bench shares with it, the config fields as flags, is `azjax.config.config_flags`)."""
    if _under(module, "azjax.cli"):
        return
    for target, _, line in _imports(MODULES[module]):
        assert not _under(target, "azjax.cli"), (
            f"{module}:{line} imports {target}: no module outside azjax/cli imports the command line")


def _imported_with(module: str) -> set[str]:
    """Every azjax module that importing `module` imports: its module-level imports, transitively, each with the
    packages above it (whose `__init__.py` Python runs first)."""
    def with_packages(name: str) -> set[str]:
        parts = name.split(".")
        return {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & set(MODULES)

    seen: set[str] = set()
    todo = sorted(with_packages(module))
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        for target, in_function, _ in _imports(MODULES[m]):
            if not in_function:
                todo.extend(with_packages(target) - seen)
    return seen


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _under(m, "azjax.train")))
def test_training_never_imports_the_engines(module: str) -> None:
    """Training (azjax/train/) plays its evaluation games through azjax/play/, never the host-side engines of
    azjax/engines/ (GTP, UCI, the engine's tree): importing any training module imports no engine module."""
    engines = sorted(m for m in _imported_with(module) if _under(m, "azjax.engines"))
    assert not engines, f"importing {module} imports {engines}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_azjax_import_is_hidden_in_a_function(module: str) -> None:
    if module in LAZY_OK or _under(module, "azjax.cli"):
        return
    hidden = [f"line {line}: {target}" for target, in_function, line in _imports(MODULES[module]) if in_function]
    assert not hidden, f"{module} imports azjax inside functions: {hidden}"


def test_there_are_no_import_circles() -> None:
    graph = {m: {t for t, in_function, _ in _imports(f) if not in_function and t in MODULES and t != m}
             for m, f in MODULES.items()}
    # A package's __init__ is imported with each of its modules; its own imports of them are not a circle.
    for m in graph:
        graph[m] = {t for t in graph[m] if not _under(m, t) and not _under(t, m) or m == t}
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                raise AssertionError("import circle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_every_public_name_resolves_to_what_its_module_defines() -> None:
    import importlib

    import azjax

    assert sorted(azjax.__all__) == sorted(azjax._EXPORTS)
    for name, module in azjax._EXPORTS.items():
        assert getattr(azjax, name) is getattr(importlib.import_module(module), name), name


def test_package_inits_only_re_export_what_their_modules_define() -> None:
    """A package's `__init__.py` holds no code: a docstring, imports from its own modules and `__all__`."""
    for file in sorted(ROOT.rglob("__init__.py")):
        if file.parent == ROOT:  # the lazy public API of azjax/__init__.py
            continue
        for node in ast.parse(file.read_text()).body:
            docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            all_ = isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]
            assert docstring or all_ or isinstance(node, ast.Import | ast.ImportFrom), (
                f"{file.relative_to(ROOT.parent)}:{node.lineno}: code in a package's __init__.py")


def test_azjax_train_is_a_plain_package_with_the_train_function() -> None:
    import types

    import azjax.train
    from azjax.train.driver import train

    assert type(azjax.train) is types.ModuleType and azjax.train.train is train


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_module_imports_a_private_name_of_another_azjax_module() -> None:
    """What one module uses of another has a public name: no `from azjax.x import _name` in azjax/, scripts/, lab/ or
    tests/ (a module's own private names stay its own; dunder names are fine)."""
    found = []
    for folder in ("azjax", "scripts", "lab", "tests"):
        for file in sorted((ROOT.parent / folder).rglob("*.py")):
            module = _module_name(file) if folder == "azjax" else str(file.relative_to(ROOT.parent))
            for node in ast.walk(ast.parse(file.read_text(), filename=str(file))):
                if not isinstance(node, ast.ImportFrom):
                    continue
                target = _resolve(module, node, file.name == "__init__.py") if folder == "azjax" else node.module or ""
                if target != module and (target == "azjax" or target.startswith("azjax.")):
                    found += [f"{file.relative_to(ROOT.parent)}:{node.lineno}: {target}.{a.name}"
                              for a in node.names if _private(a.name)]
    assert not found, "private names imported from other modules:\n" + "\n".join(found)


def _trainer_private_names() -> set[str]:
    """The private members of `Trainer` (azjax/train/loop.py): its methods and the attributes it sets on `self` whose
    names start with one underscore."""
    tree = ast.parse((ROOT / "train" / "loop.py").read_text())
    trainer = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Trainer")
    return {n for n in _class_members(trainer) if _private(n)}


def _class_members(cls: ast.ClassDef) -> set[str]:
    """The names a class defines: its methods and class attributes, and what its methods assign to `self.NAME`."""
    names = {n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    names |= {t.id for n in cls.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    names |= {n.attr for n in ast.walk(cls) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
              and isinstance(n.value, ast.Name) and n.value.id == "self"}
    return names


def _private_trainer_uses(file: Path, private: set[str], trainer_subclasses_ok: bool) -> list[str]:
    """`x._name` in `file` for the names `private`, but for a class's own members on `self` (and, where
    `trainer_subclasses_ok`, anything on `self` in a subclass of Trainer)."""
    found: list[str] = []

    def visit(node: ast.AST, own: set[str], subclass: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                bases = {ast.unparse(b).rsplit(".", 1)[-1] for b in child.bases}
                visit(child, _class_members(child), trainer_subclasses_ok and "Trainer" in bases)
                continue
            if isinstance(child, ast.Attribute) and child.attr in private:
                on_self = isinstance(child.value, ast.Name) and child.value.id == "self"
                if not (on_self and (child.attr in own or subclass)):
                    found.append(f"{file.relative_to(ROOT.parent)}:{child.lineno}: {ast.unparse(child)}")
            visit(child, own, subclass)

    visit(ast.parse(file.read_text(), filename=str(file)), set(), False)
    return found


def test_no_private_member_of_the_trainer_is_used_outside_its_module() -> None:
    """`Trainer`'s interface is public and documented (`init`, `step`, `abstract_state`, `lower_step`, `init_local`,
    `step_local`, `sgd_step`, ...): no module of azjax/, scripts/, lab/ or tests/ but azjax/train/loop.py uses one of
    its private members (`x._name`), except a subclass of Trainer in azjax/train/ on `self`. A class's own members of
    the same name (`self._init` in a Sweep) are its own."""
    private = _trainer_private_names()
    assert {"_init", "_step", "_bind"} <= private  # the check reads the class it means
    found = []
    for folder in ("azjax", "scripts", "lab", "tests"):
        for file in sorted((ROOT.parent / folder).rglob("*.py")):
            if file != ROOT / "train" / "loop.py":
                found += _private_trainer_uses(file, private, trainer_subclasses_ok=file.parent == ROOT / "train")
    assert not found, "private members of Trainer used outside azjax/train/loop.py:\n" + "\n".join(found)
