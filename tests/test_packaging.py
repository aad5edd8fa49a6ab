"""What a packager sees: license, typing marker, metadata, both program names, one version."""

from __future__ import annotations

import re
import tomllib

import streamlearn
from streamlearn import _version
from tests.paths import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]


def test_bsd_3_clause_license_as_an_spdx_expression_with_its_file():
    assert PROJECT["license"] == "BSD-3-Clause"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License") and "Neither the name of" in text
    assert not any(c.startswith("License ::") for c in PROJECT["classifiers"])  # PEP 639


def test_typed_package_with_urls_and_classifiers():
    assert (ROOT / "streamlearn" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["streamlearn"]
    assert "Typing :: Typed" in PROJECT["classifiers"]
    assert {"Homepage", "Source", "Issues"} <= set(PROJECT["urls"])
    minor = re.search(r">=3\.(\d+)", PROJECT["requires-python"]).group(1)
    assert f"Programming Language :: Python :: 3.{minor}" in PROJECT["classifiers"]


def test_sl_and_streamlearn_are_the_same_program():
    assert PROJECT["scripts"] == {"sl": "streamlearn.cli:main",
                                  "streamlearn": "streamlearn.cli:main"}  # fmt: skip


def test_the_version_has_one_source():
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    attr = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "streamlearn._version.__version__"
    assert streamlearn.__version__ == _version.__version__
    assert "version =" not in (ROOT / "pyproject.toml").read_text().split("[project]")[1].split(
        "[")[0]  # fmt: skip


def test_the_shipped_kernels_are_package_data():
    data = PYPROJECT["tool"]["setuptools"]["package-data"]["streamlearn"]
    assert "system/prebuilt/*/manifest.json" in data  # one directory per Python version
    assert "system/prebuilt/*/direct.json" in data  # (and nrt.o.z: system/shipped.py)
    assert "system/prebuilt/*/*.z" in data and "system/prebuilt/*/*/*.z" in data
