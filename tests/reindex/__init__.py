"""Tests of recengine.pipeline.reindex: local, incremental and Spark, kills and resumes."""
