"""Domain exceptions. No HTTP status codes here: only ``web/api/errors.py`` maps them to
responses."""

from __future__ import annotations


class RecengineError(Exception):
    """Base of every error recengine raises on purpose; ``code`` is a stable machine name."""

    code = "error"


class ConfigError(RecengineError):
    """A setting is missing or invalid; the message names it."""

    code = "invalid_config"


class InvalidRecord(RecengineError):
    """An input article record cannot be accepted (missing id, empty text, bad date, too large)."""

    code = "invalid_record"


class NotFound(RecengineError):
    """The article (or other object) asked for does not exist or was deleted."""

    code = "not_found"

    @classmethod
    def article(cls, external_id: str) -> NotFound:
        """The one phrasing of a missing article, wherever it is looked up."""
        return cls(f"no article with id {external_id!r}")


class SchemaOutOfDate(RecengineError):
    """The database schema is missing or older than this code; run ``recengine db upgrade``."""

    code = "schema_out_of_date"


class ModelMissing(RecengineError):
    """No IDF model has been fitted yet: run ``recengine reindex``."""

    code = "model_missing"


class InvalidRequest(RecengineError):
    """A query's parameters are invalid (k out of range, bad date, too many filter values...)."""

    code = "invalid_request"


class Conflict(RecengineError):
    """The request contradicts what is stored (e.g. an override that another one rules out)."""

    code = "conflict"


class RateLimited(RecengineError):
    """Too many requests from one client (or in all) for this endpoint; try again shortly."""

    code = "rate_limited"


class Overloaded(RecengineError):
    """The service has more work queued than it takes on: try again shortly."""

    code = "overloaded"
