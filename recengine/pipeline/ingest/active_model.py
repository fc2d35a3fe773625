"""The active IDF model, loaded once per version and process."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from recengine.errors import ConfigError
from recengine.features.tfidf import IdfModel
from recengine.pipeline.featurize import same_model_settings
from recengine.storage.rows.features import load_model_payload


class ModelCache:
    """Keeps the last loaded model: versions change only at a reindex.

    Args:
        params: the current settings' :func:`~recengine.pipeline.featurize.model_params`; a model
            fitted with other settings is refused, because new vectors would not be comparable
            with the stored ones.
    """

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params
        self._version: int | None = None
        self._model: IdfModel | None = None

    def get(self, *, session: Session, version: int | None) -> IdfModel | None:
        if version is None:
            return None
        if version != self._version or self._model is None:
            payload, params = load_model_payload(session=session, version=version)
            # Only the settings keys count: the rest records how the model was fitted. The
            # encoder's key is there only when it is on: compared whichever side has it.
            if not same_model_settings(params, self.params):
                raise ConfigError(
                    f"the active IDF model (version {version}) was built with other settings "
                    f"({params}); these settings give {self.params}: run `recengine reindex`"
                )
            self._model = IdfModel.from_bytes(payload)
            self._version = version
        return self._model
