"""The sequence-outcome contract (spec/outcomes.md): datasets, sequences, versioned labels.

``labels`` validates a write (pure); ``store`` keeps datasets, sequences, label versions
and per-key dataset rights in the ledger database (migration 0007).
"""
