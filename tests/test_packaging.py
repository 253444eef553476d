"""The package's metadata builds without setuptools' deprecation banners."""

from __future__ import annotations

import re
from pathlib import Path

PYPROJECT = (Path(__file__).parent.parent / "pyproject.toml").read_text()


def test_license_is_an_spdx_expression_that_setuptools_reads():
    # a {text = ...} table makes every build print a deprecation banner; the string form needs setuptools 77
    assert re.search(r'^license = "Apache-2\.0"$', PYPROJECT, re.MULTILINE)
    assert re.search(r'^requires = \["setuptools>=77"\]$', PYPROJECT, re.MULTILINE)
