"""Corpora out of the shards: the SFT export (chat + token rows, dataset card) and ``shards export``."""
