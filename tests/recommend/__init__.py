"""Tests of recengine.recommend: related lists, feeds, variants, overrides in lists."""
