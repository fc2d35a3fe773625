"""Benchmarks: they print figures and compare against a reference run in the same process."""
