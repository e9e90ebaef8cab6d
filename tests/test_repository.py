"""The repository stands alone: nothing it runs reads a path of the machine it was written on, and the data it
needs ships inside the package."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from azjax.play.benchmarks import PONS_DATA, PONS_SETS

ROOT = Path(__file__).resolve().parents[1]
# Paths of the machines azjax was developed on, and the shared folder beside the repository there.
MACHINE_PATHS = re.compile(r"/work/(main|shared)|\.\./shared|/tmp/pytest-of-")


def tracked(*folders: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *folders], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / line for line in out.stdout.splitlines() if line.endswith((".py", ".sh", ".ipynb", ".toml"))]


def test_no_code_test_or_script_names_a_machine_path() -> None:
    files = tracked("azjax", "tests", "scripts", ".ci", "notebooks", "pyproject.toml")
    assert len(files) > 50
    found = [f"{f.relative_to(ROOT)}:{n}" for f in files if f.name != "test_repository.py"
             for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1) if MACHINE_PATHS.search(line)]
    assert not found, f"machine paths in {found}"


def test_the_detector_finds_a_machine_path_where_there_is_one() -> None:
    assert MACHINE_PATHS.search('PONS = "/work/shared/benchmarks/connect_four_pons.jsonl"')
    assert MACHINE_PATHS.search("see ../shared/METHODS.md")
    assert not MACHINE_PATHS.search("results/models/connect_four_quick")


def test_pons_sets_ship_inside_the_package_whole() -> None:
    rows = [json.loads(line) for line in Path(PONS_DATA).read_text().splitlines()]
    assert Path(PONS_DATA).is_relative_to(ROOT / "azjax")
    assert len(rows) == 6000 and {r["set"] for r in rows} == set(PONS_SETS)
    assert all(sum(r["set"] == s for r in rows) == 1000 for s in PONS_SETS)


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
