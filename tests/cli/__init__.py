"""Tests of the command line, through click's runner and real processes."""
