"""Shared test set-up: the built-in tables, --update-fixtures, and the slow tier (--runslow)."""

from __future__ import annotations

import os

import pytest

from ms_fmk_transplt.ruleset import compile_rules, load_rules


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-fixtures",
        action="store_true",
        help="rewrite fixture .out.py / .findings files from the current engine",
    )
    parser.addoption(
        "--runslow",
        action="store_true",
        help="also run tests marked slow (subprocesses, end-to-end training, wheel build); CI does",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without --runslow, tests marked slow are skipped so the edit loop stays fast."""
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow tier: run with --runslow (CI does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def update_fixtures(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-fixtures"))


@pytest.fixture(scope="session")
def builtin_tables():
    return compile_rules(load_rules())


@pytest.fixture(autouse=True, scope="session")
def _private_result_cache(tmp_path_factory: pytest.TempPathFactory):
    """Runs in tests keep their result cache in a temporary folder, never in the user's."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg_cache"))
    yield
