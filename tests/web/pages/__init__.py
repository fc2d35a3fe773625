"""Tests of what a browser loads, in a real headless Chromium."""
