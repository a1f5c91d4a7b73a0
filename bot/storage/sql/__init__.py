"""Storage behaviour written once, as SQL both backends run, over a small seam.

=================  ============================================================================
module             what lives there
=================  ============================================================================
``seam``           :class:`Database` and :class:`Tx` (fetch, execute, a transaction), the
                   :class:`Dialect` naming what each backend spells differently, :func:`via`
``store``          :class:`SQLStore`: one object per idea below, every storage method
``history``        resets, clears, stats, export, chat settings
``audit``          the audit trail
``directory``      the chat directory and history pages
``erasure``        deleting one person's data
``ledger``         the usage ledger and plugin key-value data
``summaries``      rolling summaries and prompt-window marks
``deliveries``     delivery records
``overheard``      group chatter kept as context
``maintenance``    retention, interrupted turns, chat migration
``turns``          completing, failing and marking turns; beginning one after overheard chatter
``memories``       memory records, unembedded rows, turn vectors (search stays per backend)
``coordination``   inbox, leases and limits that are one statement on the database's clock
=================  ============================================================================

SQL here is written with PostgreSQL's ``$1`` placeholders; the SQLite backend reads them as
SQLite's ``?1`` (:func:`bot.storage.sqlite.connection.sqlite_sql`). What really differs stays
per backend, each in one named place: the turn-order lock (:meth:`Tx.lock`), the window cache
(:class:`Windows`), full-text scoring, migrations, and the coordination statements each database
does its own way (``bot.storage.<backend>``, subclasses of the parts here).
"""
