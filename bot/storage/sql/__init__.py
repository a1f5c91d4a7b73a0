"""Storage behaviour written once, as SQL both backends run, over a small seam (``seam``):
one module per idea, composed by ``store.SQLStore`` (the map: docs/architecture.md).

SQL here is written with PostgreSQL's ``$1`` placeholders; the SQLite backend reads them as
SQLite's ``?1`` (:func:`bot.storage.sqlite.connection.sqlite_sql`). What really differs stays
per backend, each in one named place: the turn-order lock (:meth:`Tx.lock`), the window cache
(:class:`Windows`), full-text scoring, migrations, and the coordination statements each database
does its own way (``bot.storage.<backend>``, subclasses of the parts here).
"""
