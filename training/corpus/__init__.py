"""Corpus builder: registry packages -> clean, deduplicated, licence-gated
documents split into train/valid/test (see build.py)."""
