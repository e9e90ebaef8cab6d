"""The repository stands alone: nothing it runs reads a path of the machine it was written on, and the data it
needs ships inside the package. The package ships the library alone: no scripts, studies, tests or test harnesses."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import tomllib
from pathlib import Path

from azjax.play.benchmarks import PONS_DATA, PONS_SETS

ROOT = Path(__file__).resolve().parents[1]
# A path of the machine the checkout is on: under the folder that holds the checkout (where a shared data folder
# and other checkouts sit beside it), the shared folder reached from the checkout, and pytest's temporary folders.
# Read from where this file is, so that the pattern spells no machine's path itself.
MACHINE_PATHS = re.compile(rf"{re.escape(ROOT.parent.as_posix())}/\w|\.\./shared|/tmp/pytest-of-")


def tracked(*folders: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *folders], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / line for line in out.stdout.splitlines() if line.endswith((".py", ".sh", ".ipynb", ".toml"))]


def test_no_code_test_or_script_names_a_machine_path() -> None:
    files = tracked("azjax", "tests", "scripts", "lab", ".ci", "notebooks", "pyproject.toml")
    assert len(files) > 50
    # This file names examples for the detector's own test.
    found = [f"{f.relative_to(ROOT)}:{n}" for f in files if f.name != "test_repository.py"
             for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1) if MACHINE_PATHS.search(line)]
    assert not found, f"machine paths in {found}"


def test_the_detector_finds_a_machine_path_where_there_is_one() -> None:
    beside = ROOT.parent.as_posix()
    assert MACHINE_PATHS.search(f'PONS = "{beside}/shared/benchmarks/connect_four_pons.jsonl"')
    assert MACHINE_PATHS.search(f"cd {ROOT.as_posix()} && python -m scripts.results_index")
    assert MACHINE_PATHS.search("see ../shared/METHODS.md")
    assert not MACHINE_PATHS.search("results/models/connect_four_quick")
    assert not MACHINE_PATHS.search("python -m lab.sai_7x7.sai_7x7 --out /tmp/sai.json")


def test_pons_sets_ship_inside_the_package_whole() -> None:
    rows = [json.loads(line) for line in Path(PONS_DATA).read_text().splitlines()]
    assert Path(PONS_DATA).is_relative_to(ROOT / "azjax")
    assert len(rows) == 6000 and {r["set"] for r in rows} == set(PONS_SETS)
    assert all(sum(r["set"] == s for r in rows) == 1000 for s in PONS_SETS)


def packaged_modules() -> dict[str, Path]:
    """The modules the wheel holds (dotted name -> file), found as setuptools finds them: the packages that
    pyproject.toml's `[tool.setuptools.packages.find]` selects (namespace packages included, its default there)."""
    from setuptools import find_namespace_packages, find_packages

    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    finder = find_namespace_packages if find.get("namespaces", True) else find_packages
    packages = finder(where=str(ROOT / find.get("where", ["."])[0]), include=find.get("include", ["*"]),
                      exclude=find.get("exclude", []))
    return {f"{package}.{file.stem}": file for package in packages
            for file in sorted((ROOT / package.replace(".", "/")).glob("*.py"))}


HARNESS = re.compile(r"fuzz|soak|compile_?watch", re.IGNORECASE)


def test_the_wheel_ships_the_library_and_no_test_harness() -> None:
    """No fuzzer, soak or compile watch in the wheel (lab/reliability/ holds them): no module of that name, no
    function or class of that name, and no import of the folders the wheel leaves out (lab/, scripts/, tests/)."""
    modules = packaged_modules()
    assert {"azjax.train.loop", "azjax.cli.main", "azjax.train.bench", "azjax.compile_log"} <= set(modules)
    assert all(name.startswith("azjax.") for name in modules), sorted(n for n in modules if not n.startswith("azjax."))
    found = [name for name in modules if HARNESS.search(name)]
    for name, file in modules.items():
        for node in ast.walk(ast.parse(file.read_text(), filename=str(file))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and HARNESS.search(node.name):
                found.append(f"{name}.{node.name}")
            imported = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{name} imports {m}" for m in imported if m.split(".")[0] in ("lab", "scripts", "tests")]
    assert not found, f"test harness code in the wheel: {found}"


def test_the_harness_check_reads_the_harness_where_it_is_now() -> None:
    """The same finder run over lab/ finds the harnesses, so the check above looks at real module and function names."""
    harness = {f.stem for f in (ROOT / "lab" / "reliability").glob("*.py") if HARNESS.search(f.stem)}
    assert {"fuzz", "soak", "compile_watch"} <= harness
    tree = ast.parse((ROOT / "lab" / "reliability" / "compile_watch.py").read_text())
    assert any(isinstance(n, ast.ClassDef) and HARNESS.search(n.name) for n in ast.walk(tree))


BLOCK_OPEN = "{  # one block: bash reads it whole before running it, so an edit to this file cannot change a run"


def test_every_shell_script_is_one_block_read_before_it_runs() -> None:
    """Bash reads a script as it runs it: an edit made during an hour-long run used to change what the run did next.
    Each script's body is one { ... } group ending in `exit`, which bash parses whole before running any of it."""
    scripts = [p for p in tracked("scripts") if p.suffix == ".sh"]
    assert len(scripts) >= 8
    unguarded = [p.name for p in scripts
                 if BLOCK_OPEN not in p.read_text().splitlines() or p.read_text().splitlines()[-2:] != ["exit", "}"]]
    assert not unguarded, f"scripts not wrapped in one block: {unguarded}"


def test_a_script_in_one_block_runs_as_it_was_when_it_started(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    # The script rewrites itself in place (the same file, as an editor saving it does), then echoes.
    edit = 'text=$(sed "s/first/edited/" "$0"); printf "%s\\n" "$text" > "$0"\necho first\n'
    for block in (True, False):
        script.write_text("#!/usr/bin/env bash\n" + (f"{BLOCK_OPEN}\n{edit}exit\n}}\n" if block else edit))
        out = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=True).stdout
        assert "echo edited" in script.read_text()  # the file changed in both cases
        assert out == ("first\n" if block else "edited\n")  # the run in one block did not; the plain one did
