"""Streaming answers produced while the engine samples (see ``respond``)."""
