"""Shared fixtures for the host and guest test suites."""
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def root():
    return ROOT


def load_script(path, name=None):
    """The lab's script at @path (absolute, or under ROOT) as a module, to
    test its functions: the scripts are programs, not a package."""
    path = ROOT / path
    spec = importlib.util.spec_from_file_location(name or "_".join(path.parts[-2:])[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
