"""Tests of recengine.pipeline.clusters: the leader rule, its constraints, full passes."""
