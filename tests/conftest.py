"""Shared fixtures for the host and guest test suites."""
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def root():
    return ROOT
