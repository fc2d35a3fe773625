"""Tests of recengine.features: simhash, TF-IDF, LSA, the near-duplicate criterion."""
