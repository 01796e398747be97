"""Overnight batches on Ray: the single-call stages wrapped in actors (imports ray)."""
