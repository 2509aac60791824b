"""mypy checks every test folder (issue 29): pyproject names them one by one (a plain "tests"
would enter the fixture trees and the mypy_paths symlinks), so a new folder must be added there
or it would go unchecked; the folders holding helper modules are on mypy_path, as pytest puts
each test file's folder on sys.path."""
from __future__ import annotations

import tomllib
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
NOT_CHECKED = {"fixtures", "mypy_paths", "__pycache__", "__snapshots__"}


def mypy_config() -> dict:
    return tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["mypy"]


def test_every_test_folder_is_type_checked():
    files = set(mypy_config()["files"])
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    missing = {f"tests/{name}" for name in folders - NOT_CHECKED} - files
    assert missing == set(), f"add to [tool.mypy] files in pyproject.toml: {sorted(missing)}"
    assert "tests/*.py" in files


def test_every_folder_with_helper_modules_is_on_mypys_path():
    path = set(mypy_config()["mypy_path"].split(":"))
    for folder in TESTS.iterdir():
        if not folder.is_dir() or folder.name in NOT_CHECKED:
            continue
        helpers = [p for p in folder.glob("*.py")
                   if not p.name.startswith(("test_", "bench_", "conftest"))]
        if helpers:
            assert f"tests/{folder.name}" in path, (folder.name, helpers)
