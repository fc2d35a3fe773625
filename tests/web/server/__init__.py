"""Tests of recengine's server: real `recengine serve` processes."""
