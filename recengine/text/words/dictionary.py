"""jieba's dictionary as the part-of-speech table of
:class:`~recengine.text.words.tokenize.Tokenizer`, parsed once per machine and cached on disk.

Parsing ``dict.txt`` (349,046 lines) costs about 0.75 s, in every process that tokenizes:
each CLI command, each server worker, each reindex worker. The table is a pure function of the
dictionary file, so it is parsed once and kept in a cache file whose name carries the sha256
of the dictionary's bytes (and the cache format): a new jieba release, or an edited dictionary,
is a new file, never a stale table. Loading it is one ``marshal.loads`` (C, no code run).

Where: ``tokenizer.cache_dir`` when set, else ``$XDG_CACHE_HOME/recengine``, else
``~/.cache/recengine``. Safe to share:

* concurrent processes: the file is written whole to a temporary name and renamed over the
  target (``recengine.files.atomic_write``), so a reader sees no file or a complete one; two
  processes building at once write the same bytes;
* a read-only or missing home: when the folder cannot be created or written, the table is
  built in memory (as before) and nothing fails; point ``tokenizer.cache_dir`` somewhere
  writable to get the cache back;
* a damaged file (disk full, hand-edited): its content is checked (format, hash, shape) and a
  bad one is rebuilt.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
from pathlib import Path

from recengine.files import atomic_write

CACHE_FORMAT = 1


def jieba_dictionary_path() -> Path:
    """jieba's ``dict.txt`` (the dictionary jieba-rs embeds too), found without importing jieba."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("jieba is not installed")
    return Path(spec.origin).with_name("dict.txt")


def parse_tags(text: str) -> dict[str, str]:
    """Word -> part-of-speech tag from lines of ``word freq tag``."""
    tags: dict[str, str] = {}
    names: dict[str, str] = {}  # one string object per distinct tag (smaller cache file)
    for line in text.split("\n"):
        parts = line.split()
        if len(parts) == 3:
            tags[parts[0]] = names.setdefault(parts[2], parts[2])
    return tags


def cache_folder(configured: str = "") -> Path:
    """Where dictionary-derived data is cached (see the module docstring)."""
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "recengine"


def dictionary_tags(cache_dir: str = "", dictionary: Path | None = None) -> dict[str, str]:
    """The part-of-speech table of ``dictionary`` (jieba's by default), from the cache when it
    is there, else parsed and cached (see the module docstring).

    Args:
        cache_dir: the cache folder (``""``: the default place).
        dictionary: a dictionary file in jieba's format.
    """
    data = (dictionary or jieba_dictionary_path()).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    path = cache_folder(cache_dir) / f"pos-tags-v{CACHE_FORMAT}-{digest[:24]}.marshal"
    cached = _read(path, digest)
    if cached is not None:
        return cached
    tags = parse_tags(data.decode("utf-8"))
    try:
        with atomic_write(path) as handle:
            marshal.dump((CACHE_FORMAT, digest, tags), handle)
    except OSError:
        pass  # read-only or unusable folder: the table still works, from memory
    return tags


def _read(path: Path, digest: str) -> dict[str, str] | None:
    try:
        loaded = marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not (isinstance(loaded, tuple) and len(loaded) == 3):
        return None
    fmt, stored, tags = loaded
    if fmt != CACHE_FORMAT or stored != digest or not isinstance(tags, dict):
        return None
    return tags
