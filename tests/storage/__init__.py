"""Tests of recengine.storage: schema, column types, change notifications."""
