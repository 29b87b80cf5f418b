"""The shared argparse types of ``relay_core.cli_usage``: one message for a blank value on every command line."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from relay_core.cli_usage import UsageParser, given_path, lang_code, non_empty


def test_non_empty_keeps_the_text_and_refuses_a_blank_one() -> None:
    assert non_empty(" x ") == " x "
    with pytest.raises(argparse.ArgumentTypeError, match="must not be empty"):
        non_empty("  ")


def test_given_path_is_a_path_and_never_the_current_directory_by_accident() -> None:
    assert given_path("a/b.onnx") == Path("a/b.onnx")
    with pytest.raises(argparse.ArgumentTypeError, match="the path is empty"):
        given_path("")


def test_a_blank_value_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    parser = UsageParser(prog="tool")
    parser.add_argument("--name", type=non_empty)
    with pytest.raises(SystemExit) as stopped:
        parser.parse_args(["--name", ""])
    assert stopped.value.code == 2
    assert capsys.readouterr().err == "tool: argument --name: must not be empty (see 'tool --help')\n"


def test_lang_code_gives_the_code_of_any_spelling_and_lists_the_codes_otherwise() -> None:
    assert (lang_code("a"), lang_code("FR-FR"), lang_code("zh")) == ("en-us", "fr", "zh")
    with pytest.raises(argparse.ArgumentTypeError, match="use one of en-us, en-gb, es, fr, hi, it, pt-br, ja, zh"):
        lang_code("klingon")
