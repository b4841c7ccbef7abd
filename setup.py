"""Build hook: maps the plugin folders to import packages and builds the MARS C extension.

Everything else lives in pyproject.toml.
"""

from pathlib import Path

from setuptools import Extension, setup

# Import package -> folder. The reference plugins live under plugins/ (the layout shows the
# architecture) but install as ordinary top-level packages, exactly like third-party plugins.
PACKAGE_ROOTS = {
    "dei_framework": "dei_framework",
    "dei_coreware": "plugins/coreware",
    "dei_transports": "plugins/transports",
    "dei_llm": "plugins/llm",
    "dei_numeric": "plugins/numeric",
    "dei_python": "plugins/python",
}


# Folders that hold only data files, shipped as packages so setuptools installs them.
DATA_PACKAGES = {
    "dei_framework.app.watch.static": "dei_framework/app/watch/static",
    "dei_coreware.warriors.opponents": "plugins/coreware/warriors/opponents",
    "dei_coreware.warriors.generality": "plugins/coreware/warriors/generality",
}


def _packages() -> tuple[list[str], dict[str, str]]:
    packages, package_dir = list(DATA_PACKAGES), dict(DATA_PACKAGES)
    for name, root in PACKAGE_ROOTS.items():
        for init in sorted(Path(root).rglob("__init__.py")):
            folder = init.parent
            parts = folder.relative_to(root).parts
            package = ".".join((name, *parts))
            packages.append(package)
            package_dir[package] = folder.as_posix()
    return packages, package_dir


packages, package_dir = _packages()

setup(
    packages=packages,
    package_dir=package_dir,
    ext_modules=[
        Extension(
            "dei_coreware._cmars",
            sources=["plugins/coreware/_cmars.c"],
            extra_compile_args=["-O3", "-fno-strict-aliasing"],
        )
    ],
)
