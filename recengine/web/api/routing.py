"""One way to add an API operation: key check, JSON parsing, schema validation, documentation.

Every operation goes through :meth:`Router.add`, so each one is guarded the same way
(:func:`recengine.web.api.auth.guarded`), validated by the models it is documented with, and lists
in ``/openapi.json`` the errors it can answer with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import wraps
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

from flask import Flask, request
from pydantic import BaseModel, ValidationError
from spectree import SpecTree
from spectree.model_adapter.protocol import SchemaMode
from spectree.model_adapter.pydantic_adapter import PydanticModelAdapter
from spectree.plugins.flask_plugin import FlaskPlugin

from recengine.config import Settings
from recengine.errors import InvalidRequest, RecengineError
from recengine.web.api.auth import guarded, security
from recengine.web.api.errors import AUTH, BODY, WritesDisabled, describe, responses
from recengine.web.api.paths import ID_IN_PATH
from recengine.web.schemas.core import PATH_PARAMETERS, query_names

M = TypeVar("M", bound=BaseModel)
F = TypeVar("F", bound=Callable[..., Any])


def validated_body(model: type[M]) -> M:
    """The request body, as validated by the operation's ``json`` model (a subclass of model)."""
    return _validated("json", model)


def validated_query(model: type[M]) -> M:
    """The query string, as validated by the operation's ``query`` model."""
    return _validated("query", model)


def _validated(part: str, model: type[M]) -> M:
    value = getattr(getattr(request, "context", None), part, None)
    if not isinstance(value, model):
        raise TypeError(f"the operation validates no {part} of type {model.__name__}")
    return value


# The JSON schema of each model, by (ref_template, mode): the same for every app of a process.
_SCHEMAS: WeakKeyDictionary[type[Any], dict[tuple[str, str], dict[str, Any]]] = WeakKeyDictionary()


class _SchemaOnce(PydanticModelAdapter):
    """spectree's pydantic adapter, generating each model's JSON schema once per process.

    Generating them is most of what building an app costs (~120 schemas, ~0.25 s): paid again
    by every app a process builds (the tests build one per test). The schema depends only on
    the model class and the arguments, and spectree copies what it gets before changing it.
    """

    def json_schema(
        self, model: type[Any], *, ref_template: str, mode: SchemaMode = "validation"
    ) -> dict[str, Any]:
        schemas = _SCHEMAS.setdefault(model, {})
        key = (ref_template, mode)
        if key not in schemas:
            schemas[key] = super().json_schema(model, ref_template=ref_template, mode=mode)
        return schemas[key]


class ApiSpec(SpecTree):
    """spectree's document generator, publishing the other media types an operation's body
    may have (spectree knows ``application/json`` only)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("model_adapter", _SchemaOnce())
        super().__init__(*args, **kwargs)
        self.media_types: dict[str, tuple[str, ...]] = {}  # by operation id

    def _generate_spec(self) -> dict[str, Any]:
        spec = super()._generate_spec()
        for operations in spec["paths"].values():
            for operation in operations.values():
                content = operation.get("requestBody", {}).get("content", {})
                for media in self.media_types.get(operation.get("operationId", ""), ()):
                    content[media] = content["application/json"]
        return spec


@dataclass(frozen=True)
class Router:
    app: Flask
    api: ApiSpec
    settings: Settings

    def add(
        self,
        rule: str,
        view: Callable[..., Any],
        *,
        method: str,
        write: bool | None,
        tag: str,
        ok: type[BaseModel] | None,
        errors: Iterable[type[RecengineError] | int] = (),
        json: type[BaseModel] | None = None,
        query: type[BaseModel] | None = None,
        ok_description: str = "",
        unavailable: type[BaseModel] | None = None,
        html: bool = False,
        media_types: tuple[str, ...] = (),
    ) -> None:
        """Add ``view`` at ``rule`` for ``method``.

        Args:
            write: True: a write (needs the API key); False: a read (needs it when reads are
                not public); None: always public (the widget script, the published schema).
            tag: the OpenAPI tag (a group of operations).
            ok: model of the 200 body; errors: what else it can answer.
            json, query: models validating the body and the query string.
            unavailable: model of the 503 body when it is not the error body (health).
            html: the view renders a page, also for its own errors.
            media_types: other media types the ``json`` body is accepted as (read as JSON).
        """
        if media_types:
            self.api.media_types[view.__name__] = media_types
        requirement = {} if write is None else security(self.settings, write=write)
        documented = [*errors]
        if requirement:
            documented += [*AUTH, WritesDisabled]
        if json is not None:
            documented += BODY
        validated = self.api.validate(
            json=json,
            query=query,
            resp=responses(
                ok, documented, ok_description=ok_description, unavailable=unavailable, html=html
            ),
            tags=[tag],
            security=requirement,
            operation_id=view.__name__,
        )(view)
        if json is not None:
            validated = _falsy_bodies_checked(json)(validated)
        validated = _path_checked(validated)
        if rule.startswith("/api/"):  # pages take tracking parameters (utm_*) and ignore them
            validated = _query_checked(query)(validated)
        self.app.add_url_rule(
            rule,
            endpoint=f"{tag}.{view.__name__}",
            view_func=guarded(write=write)(validated),
            methods=[method],
        )


def _query_checked(model: type[BaseModel] | None) -> Callable[[F], F]:
    """Refuse query parameters the operation does not take, naming them (never ignore them)."""
    known = query_names(model) if model is not None else set()
    takes = ", ".join(sorted(known)) if known else "none"

    def decorate(view: F) -> F:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            unknown = sorted(set(request.args) - known)
            if unknown:
                names = ", ".join(repr(name[:40]) for name in unknown[:10])
                raise InvalidRequest(f"unknown query parameter {names}; this one takes {takes}")
            return view(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def _path_checked(view: F) -> F:
    """Validate path parameters with :data:`PATH_PARAMETERS` (as published, see ApiPlugin)."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for name, value in kwargs.items():
            if name in PATH_PARAMETERS:
                try:
                    PATH_PARAMETERS[name].validate_python(value)
                except ValidationError as exc:
                    raise InvalidRequest(f"{name}: {describe(exc)}") from None
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


class ApiPlugin(FlaskPlugin):
    """spectree's Flask plugin, publishing each path parameter with the schema that checks it."""

    def parse_path(
        self, route: Any, path_parameter_descriptions: Mapping[str, str] | None
    ) -> tuple[str, list[dict[str, Any]]]:
        path, parameters = super().parse_path(route, path_parameter_descriptions)
        for parameter in parameters:
            adapter = PATH_PARAMETERS.get(parameter["name"])
            if adapter is not None:
                parameter["schema"] = adapter.json_schema()
            if parameter["name"] == "article_id":
                parameter["description"] = ID_IN_PATH
        return path, parameters


def _falsy_bodies_checked(model: type[BaseModel]) -> Callable[[F], F]:
    """Validate ``[]``, ``""``, ``0``, ``false`` and ``null`` bodies against ``model`` here.

    spectree reads the body as ``get_json() or {}``, so it would validate an empty batch as an
    empty object and report a misleading "id: Field required".
    """

    def decorate(view: F) -> F:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            body = request.get_json(silent=True)
            if not body and body != {}:
                try:
                    model.model_validate(body)
                except ValidationError as exc:
                    raise InvalidRequest(describe(exc)) from None
            return view(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
