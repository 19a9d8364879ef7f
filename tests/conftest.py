"""Shared test set-up: the built-in tables and the --update-fixtures option."""

from __future__ import annotations

import pytest

from ms_fmk_transplt.engine import compile_rules
from ms_fmk_transplt.rules import load_rules


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-fixtures", action="store_true",
                     help="rewrite fixture .out.py / .findings files from the current engine")


@pytest.fixture(scope="session")
def update_fixtures(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-fixtures"))


@pytest.fixture(scope="session")
def builtin_tables():
    return compile_rules(load_rules())
