"""Tests of the editors' report."""
