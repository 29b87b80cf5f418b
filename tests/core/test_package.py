"""relay_core's curated top level: what ``__all__`` names is there, is the one object its module defines, and
importing the package loads nothing outside the standard library."""

from __future__ import annotations

import subprocess
import sys

import relay_core


def test_every_name_in_all_is_the_object_its_own_module_defines() -> None:
    assert len(set(relay_core.__all__)) == len(relay_core.__all__)
    assert relay_core.__all__ == sorted(relay_core.__all__, key=lambda n: (n[0].islower(), n))
    defined = [getattr(relay_core, name) for name in relay_core.__all__ if isinstance(getattr(relay_core, name), type)]
    assert len(defined) > 20
    for value in defined:
        assert value.__module__.startswith("relay_core."), value
        assert getattr(sys.modules[value.__module__], value.__name__) is value


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from relay_core import *", namespace)  # the statement under test
    assert set(namespace) - {"__builtins__"} == set(relay_core.__all__)


def test_importing_the_package_loads_only_the_standard_library() -> None:
    probe = (
        "import sys; before = set(sys.modules); import relay_core; "
        "print('\\n'.join(sorted(m for m in set(sys.modules) - before "
        "if m.split('.')[0] not in sys.stdlib_module_names and m.split('.')[0] != 'relay_core')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""
