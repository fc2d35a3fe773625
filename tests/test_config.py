from __future__ import annotations

from pathlib import Path

import pytest

from recengine.config import defaults_path, load_settings
from recengine.errors import ConfigError


def test_shipped_defaults_load(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RECENGINE_CONFIG", "RECENGINE_DATABASE_URL", "RECENGINE_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings()
    assert defaults_path().name == "defaults.toml"
    assert settings.features.hamming_k == 3
    assert settings.features.simhash_bits == 64
    assert settings.features.simhash_top_n == 0
    assert settings.tokenizer.backend == "rjieba"
    assert settings.resolved_database_url.startswith("sqlite:///")
    assert settings.resolved_database_url.endswith("recengine-data/recengine.db")


def test_override_file_then_env_then_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    override = tmp_path / "site.toml"
    override.write_text(
        'database_url = "sqlite:///from-file.db"\n[features]\nhamming_k = 5\nsimhash_top_n = 30\n'
    )
    monkeypatch.setenv("RECENGINE_CONFIG", str(override))
    settings = load_settings()
    assert settings.database_url == "sqlite:///from-file.db"
    assert (settings.features.hamming_k, settings.features.simhash_top_n) == (5, 30)

    monkeypatch.setenv("RECENGINE_FEATURES__HAMMING_K", "4")
    monkeypatch.setenv("RECENGINE_DATABASE_URL", "sqlite:///from-env.db")
    settings = load_settings()
    assert settings.features.hamming_k == 4  # env beats the file
    assert settings.features.simhash_top_n == 30  # the file still sets what env does not
    assert settings.database_url == "sqlite:///from-env.db"

    settings = load_settings({"features": {"hamming_k": 2}})
    assert settings.features.hamming_k == 2  # explicit arguments beat everything


def test_env_list_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECENGINE_TOKENIZER__DROP_POS", '["x", "c"]')
    assert load_settings().tokenizer.drop_pos == ("x", "c")


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"features": {"hamming_k": 99}}, "features.hamming_k"),
        ({"features": {"simhash_bits": 128}}, "features.simhash_bits"),
        ({"tokenizer": {"backend": "thulac"}}, "tokenizer.backend"),
        ({"database_url": "not a url"}, "database_url"),
        ({"ingest": {"naive_timezone": "Mars/Olympus"}}, "ingest.naive_timezone"),
        ({"features": {"no_such_setting": 1}}, "features.no_such_setting"),
    ],
)
def test_bad_value_names_the_setting(overrides: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        load_settings(overrides)


def test_bad_env_value_names_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECENGINE_FEATURES__HAMMING_K", "three")
    with pytest.raises(ConfigError, match=r"features\.hamming_k"):
        load_settings()


def test_missing_or_broken_override_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECENGINE_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings()
    broken = tmp_path / "broken.toml"
    broken.write_text("features = [\n")
    monkeypatch.setenv("RECENGINE_CONFIG", str(broken))
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings()


def test_the_encoder_is_on_by_default_where_its_package_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 49: dense.encoder = "auto" (shipped) resolves once, when settings load: the
    sentence encoder where ``recengine[semantic]`` is installed, LSA alone elsewhere."""
    from importlib import metadata

    import recengine.config as config

    assert 'encoder = "auto"' in config.defaults_path().read_text("utf-8")
    assert load_settings({"dense": {"encoder": "auto"}}).dense.encoder == "use"  # installed

    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(config.metadata, "version", missing)
    assert load_settings({"dense": {"encoder": "auto"}}).dense.encoder == "lsa"
    assert load_settings({"dense": {"encoder": "use"}}).dense.encoder == "use"  # asked for
    with pytest.raises(ConfigError, match="dense"):
        load_settings({"dense": {"encoder": "bert"}})


def test_defaults_parsed_once_are_never_changed_by_a_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped defaults are parsed once per process (``config._shipped``): what one load
    overrides (arguments, the environment, an override file) leaks into no later load, and
    an override file edited in between is read again."""
    for name in ("RECENGINE_CONFIG", "RECENGINE_FEATURES__HAMMING_K"):
        monkeypatch.delenv(name, raising=False)
    assert load_settings({"features": {"hamming_k": 2}}).features.hamming_k == 2
    monkeypatch.setenv("RECENGINE_FEATURES__HAMMING_K", "4")
    assert load_settings().features.hamming_k == 4
    monkeypatch.delenv("RECENGINE_FEATURES__HAMMING_K")
    assert load_settings().features.hamming_k == 3
    override = tmp_path / "site.toml"
    override.write_text("[features]\nhamming_k = 5\n")
    monkeypatch.setenv("RECENGINE_CONFIG", str(override))
    assert load_settings().features.hamming_k == 5
    override.write_text("[features]\nhamming_k = 4\n")  # same size, maybe the same mtime
    assert load_settings().features.hamming_k == 4
    monkeypatch.delenv("RECENGINE_CONFIG")
    assert load_settings() == load_settings({})
    assert load_settings().features.hamming_k == 3
