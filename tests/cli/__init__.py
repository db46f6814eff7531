"""Tests of the ``leaderlog`` command line."""
