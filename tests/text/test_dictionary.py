"""The part-of-speech table cache: equal to parsing, reused, rebuilt when bad, harmless when
the folder cannot be written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from recengine.text.words import dictionary
from recengine.text.words.dictionary import cache_folder, dictionary_tags, parse_tags
from recengine.text.words.tokenize import jieba_dictionary_tags


@pytest.fixture(scope="module")
def parsed() -> dict[str, str]:
    return jieba_dictionary_tags()


def test_cached_table_equals_the_parsed_one_and_is_reused(
    tmp_path: Path, parsed: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(parsed) > 300_000 and parsed["北京"] == "ns"
    assert dictionary_tags(str(tmp_path)) == parsed
    (file,) = tmp_path.glob("pos-tags-v*.marshal")

    def no_parse(text: str) -> dict[str, str]:
        raise AssertionError("parsed again despite the cache")

    monkeypatch.setattr(dictionary, "parse_tags", no_parse)
    assert dictionary_tags(str(tmp_path)) == parsed
    assert list(tmp_path.iterdir()) == [file]  # no temporary file left behind


def test_a_new_dictionary_is_a_new_file(tmp_path: Path) -> None:
    one, two = tmp_path / "one.txt", tmp_path / "two.txt"
    one.write_text("词语 10 n\n快 5 d\n", encoding="utf-8")
    two.write_text("词语 10 v\n", encoding="utf-8")
    cache = tmp_path / "cache"
    assert dictionary_tags(str(cache), one) == {"词语": "n", "快": "d"}
    assert dictionary_tags(str(cache), two) == {"词语": "v"}
    assert len(list(cache.iterdir())) == 2


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", b"\xe9"])
def test_a_damaged_cache_file_is_rebuilt(tmp_path: Path, damage: bytes) -> None:
    source = tmp_path / "dict.txt"
    source.write_text("词语 10 n\n", encoding="utf-8")
    cache = tmp_path / "cache"
    dictionary_tags(str(cache), source)
    (file,) = cache.iterdir()
    file.write_bytes(damage)
    assert dictionary_tags(str(cache), source) == {"词语": "n"}
    assert file.read_bytes() != damage


def test_an_unwritable_folder_builds_in_memory(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        blocked = tmp_path / "file-not-folder"
        blocked.write_text("")  # a folder cannot be created under a file, even by root
        folder = blocked / "cache"
    else:
        folder = tmp_path / "ro"
        folder.mkdir(mode=0o500)
    source = tmp_path / "dict.txt"
    source.write_text("词语 10 n\n", encoding="utf-8")
    assert dictionary_tags(str(folder), source) == {"词语": "n"}


def test_default_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_folder() == tmp_path / "recengine"
    assert cache_folder("~/x") == Path.home() / "x"
    assert parse_tags("a 1 n\nbad line\nb 2 v") == {"a": "n", "b": "v"}


def test_concurrent_processes_agree(tmp_path: Path, parsed: dict[str, str]) -> None:
    """Four processes build the cache at once: each gets the full table, one file remains."""
    code = (
        "import sys; from recengine.text.words.dictionary import dictionary_tags; "
        f"print(len(dictionary_tags({str(tmp_path)!r})))"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert outputs == [str(len(parsed))] * 4
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert dictionary_tags(str(tmp_path)) == parsed
