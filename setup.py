"""Build hook: ship the top-level ``conf/`` inside the wheel as ``neuroplug/conf``.

The config groups live at the repository's top level so that they are easy to find and
edit; an installed wheel has no repository, so the build copies them into the package.
Editable installs read ``conf/`` in place (see ``neuroplug.config.paths``).
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithConf(build_py):
    """``build_py`` that also copies ``conf/`` into the built ``neuroplug`` package."""

    def run(self) -> None:
        super().run()
        source = Path(__file__).resolve().parent / "conf"
        if source.is_dir() and not self.editable_mode:
            shutil.copytree(source, Path(self.build_lib) / "neuroplug" / "conf", dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildPyWithConf})
