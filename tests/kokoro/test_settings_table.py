"""The container's settings table (``kokoro_server.config.SETTINGS``): every field once, every variable documented.

``ServerConfig.from_env``, ``kokoro-server``'s parser and ``config_from_args`` are all read from the table, so a
setting missing from it would be silently unreachable; these checks make a new field without a row fail here."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import kokoro_server.config as config_module
from kokoro_server.cli import build_parser
from kokoro_server.config import SETTINGS, ServerConfig

DOCS = Path(__file__).resolve().parents[2] / "docs" / "server.md"


def _fields(setting: config_module.Setting) -> tuple[str, ...]:
    return (setting.field,) if isinstance(setting.field, str) else setting.field


def test_every_field_is_set_by_exactly_one_setting() -> None:
    counted = Counter(name for setting in SETTINGS for name in _fields(setting))
    assert set(counted) == {field.name for field in dataclasses.fields(ServerConfig)}
    assert set(counted.values()) == {1}


def test_variables_and_options_are_unique_and_every_variable_is_documented() -> None:
    variables = [setting.env for setting in SETTINGS]
    flags = [setting.flag.name for setting in SETTINGS if setting.flag is not None]
    assert len(set(variables)) == len(variables) and len(set(flags)) == len(flags)
    docs = DOCS.read_text()
    assert config_module.__doc__ is not None
    assert [v for v in variables if v not in docs or v not in config_module.__doc__] == []


def test_the_parser_offers_exactly_the_table_options() -> None:
    for sagemaker in (False, True):
        offered = {option for action in build_parser(sagemaker=sagemaker)._actions for option in action.option_strings}
        table = {setting.flag.name for setting in SETTINGS if setting.flag is not None}
        assert offered - table == {"-h", "--help", "--version", "--log-level"}
        assert table <= offered
