"""Alembic environment of the ledgers, run programmatically by ``judge.ledgers.store``.

The caller hands in an open connection (``config.attributes["connection"]``); on
PostgreSQL a transaction-scoped advisory lock serialises concurrent upgrades
(several batch workers opening the same ledger at once).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from judge.ledgers.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(hashtext('rcjudge-ledgers'))"))
    context.run_migrations()
