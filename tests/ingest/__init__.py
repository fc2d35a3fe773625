"""Tests of recengine.pipeline.ingest: readers, records, the ingester, kills."""
