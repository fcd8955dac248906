"""Build hook: ship the top-level content directories inside the package.

checks/, rules/, dashboards/, docs/ (and contrib/ when present) stay where the repository layout puts them,
at the top of the repository; a wheel carries a copy under tunewatch/data/<name>/, where
`importlib.resources` finds it in every pip mode (venv, --user, --target, system). An
editable install and a source checkout read the checkout's directories directly, so the
copy is skipped there. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = ("checks", "rules", "dashboards", "docs", "contrib")
HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithContent(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for name in SHIPPED:
            source = os.path.join(HERE, name)
            if not os.path.isdir(source):
                continue
            target = os.path.join(self.build_lib, "tunewatch", "data", name)
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*"))


setup(cmdclass={"build_py": BuildPyWithContent})
