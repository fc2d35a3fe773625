"""Tests of recengine.index and the derived indexes, each against brute force."""
