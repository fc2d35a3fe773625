"""Ingest: article records in, upserted with their features, one transaction per batch.

* :mod:`.readers` turn files (JSON Lines, JSON, CSV/TSV; bounded reads) into raw records;
* :mod:`.record_fields` is the one table of field names every input accepts, :mod:`.records`
  validates a record against it, :mod:`.record_schema` publishes it (OpenAPI);
* :mod:`.ingester` (``Ingester``) writes validated records with their features and keeps the
  clusters right (``pipeline.clusters``), under the model :mod:`.active_model` loads;
* :mod:`.summary` is what an ingest reports.

``from recengine.pipeline.ingest import Ingester`` is the public path (README).
"""

from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.ingest.summary import IngestSummary

__all__ = ["IngestSummary", "Ingester"]
