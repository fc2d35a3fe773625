"""How the command line reads what was typed: numbers in ASCII digits, text in UTF-8.

click's own ``int`` and ``float`` call Python's, which also take other scripts' digits
(``int("٣") == 3``: Arabic-Indic three), underscores (``1_000``) and, for floats, ``nan`` and
``inf``; and an argument that is not valid UTF-8 reaches a command as text with lone
surrogates (Python's ``surrogateescape``), which fails only when it is written to the database
or printed. Here a number is ASCII digits (``0-9``, an optional sign; a float as written in
JSON), bounded, and every text argument is checked for UTF-8 before the command runs
(:func:`utf8_checked`); file paths are exempt (a Unix file name need not be UTF-8).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import click

BIGINT_MAX = 2**63 - 1  # ids are SQL BIGINT: anything larger names nothing
_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_FLOAT = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?", re.ASCII)
_MAX_DIGITS = 30  # longer digit strings are refused before int() spends time on them


class Integer(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.3 on
    """An integer in ASCII digits within ``[low, high]`` (``high`` at most BIGINT_MAX)."""

    name = "integer"

    def __init__(self, low: int | None = None, high: int = BIGINT_MAX) -> None:
        self.low = low
        self.high = high

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and len(value) <= _MAX_DIGITS and _INT.fullmatch(value):
            number = int(value)
        else:
            self.fail(f"{_quoted(value)} is not an integer (ASCII digits 0-9)", param, ctx)
        if (self.low is not None and number < self.low) or number > self.high:
            self.fail(f"{_quoted(value)} is not in the range {self._range()}", param, ctx)
        return number

    def _range(self) -> str:
        return f"{self.low}-{self.high}" if self.low is not None else f"at most {self.high}"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "INTEGER"


class Number(click.ParamType):  # type: ignore[type-arg]
    """A finite number written as in JSON (ASCII digits), within ``[low, high]``."""

    name = "number"

    def __init__(self, low: float, high: float) -> None:
        self.low = low
        self.high = high

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if (isinstance(value, float | int) and not isinstance(value, bool)) or (
            isinstance(value, str) and len(value) <= _MAX_DIGITS and _FLOAT.fullmatch(value)
        ):
            number = float(value)
        else:
            self.fail(f"{_quoted(value)} is not a number (ASCII digits, e.g. 0.05)", param, ctx)
        if not self.low <= number <= self.high:
            self.fail(
                f"{_quoted(value)} is not in the range {self.low:g}-{self.high:g}", param, ctx
            )
        return number

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "NUMBER"


def _quoted(value: Any) -> str:
    from recengine.jsontext import printable  # `recengine --help` imports cli modules only

    return f"'{printable(str(value), 40)}'"


def utf8_checked(command: click.Command) -> click.Command:
    """``command`` (and a group's subcommands) refusing, with exit 2 and the parameter's name,
    text arguments that are not valid UTF-8, before its callback runs. Idempotent."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            utf8_checked(sub)
    callback = command.callback
    if callback is not None and not getattr(callback, "_utf8_checked", False):
        command.callback = _checking(command, callback)
    return command


def _checking(command: click.Command, callback: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(callback)
    def checked(*args: Any, **kwargs: Any) -> Any:
        for name, value in kwargs.items():
            for text in value if isinstance(value, tuple | list) else (value,):
                if isinstance(text, str) and not _is_utf8(text):
                    raise click.BadParameter(
                        f"{_quoted(_as_bytes(text))} is not valid UTF-8",
                        param=next((p for p in command.params if p.name == name), None),
                    )
        return callback(*args, **kwargs)

    checked._utf8_checked = True  # type: ignore[attr-defined]
    return checked


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: bytes that were not UTF-8 (surrogateescape)
        return False
    return True


def _as_bytes(text: str) -> str:
    """The argument as typed, its bytes that were not UTF-8 as ``\\xff``."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that stood for no byte
        raw = text.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")
