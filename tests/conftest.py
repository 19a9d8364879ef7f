"""Shared test set-up: the built-in tables, --update-fixtures, the slow tier (--runslow), and the
grouping of tests for parallel runs (`-n auto --dist loadgroup`, the README's test command)."""

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


SHARED_SCOPES = ("module", "class", "package")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that share a module- or class-scoped fixture form one xdist group, so a parallel run
    makes each such fixture once (on one worker) instead of once per worker that gets one of its
    tests: those fixtures are the training runs. Without --runslow, tests marked slow are skipped
    so the edit loop stays fast."""
    for item in items:
        if shares_a_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow tier: run with --runslow (CI does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def shares_a_fixture(item: pytest.Item) -> bool:
    """True when the test uses a fixture made once for several tests of its file."""
    info = getattr(item, "_fixtureinfo", None)
    definitions = info.name2fixturedefs.values() if info is not None else ()
    return any(defs[-1].scope in SHARED_SCOPES for defs in definitions if defs)


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
