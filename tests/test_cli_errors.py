"""The command line's errors: what a person typed gets a message in their words and exit 2;
an internal error's hint (--debug) works as it reads."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings


@pytest.fixture
def run(settings: Settings) -> Any:
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        return runner.invoke(main, list(args), obj=CliContext(settings))

    return invoke


def test_debug_is_taken_after_the_subcommand_as_the_hint_says(
    run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import recengine.storage.migrate as migrate

    def broken(*_: Any, **__: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(migrate, "current_revision", broken)
    plain = run("db", "upgrade")
    assert plain.exit_code == 70
    assert "internal error: RuntimeError: boom" in plain.output
    assert "run again with --debug" in plain.output
    for args in (
        ["db", "upgrade", "--debug"],
        ["db", "--debug", "upgrade"],
        ["--debug", "db", "upgrade"],
    ):
        again = run(*args)
        assert "No such option" not in again.output, args
        assert isinstance(again.exception, RuntimeError), args  # the traceback, not the hint
