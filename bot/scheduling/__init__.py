"""Jobs and work fired later or elsewhere; plugins get the scheduler from :mod:`bot.plugins`.

* :mod:`.scheduler` -- the scheduler plugins schedule jobs on (reminders and the like);
* :mod:`.stored_jobs` -- what a stored job is: a call by name with plain data, routed to the
  live scheduler;
* :mod:`.inbox` -- one replica's share of the platform inbox: claim lane heads, run them,
  keep the leases;
* :mod:`.jobstore` -- where jobs live (their own SQLite file, or the bot's PostgreSQL database)
  and how a due run is *claimed* there before it fires;
* :mod:`.runner` -- apscheduler's loop, made to fire only while this replica may;
* :mod:`.leader` -- the lease that makes one replica at a time the one that fires;
* :mod:`.recurrence` -- scheduled posts' schedule grammar (pure), and :mod:`.posts` -- a
  scheduled post as the plain data its job carries.

apscheduler 3 (``AsyncIOScheduler``; its jobs in SQLite through the standard library, in
PostgreSQL through its ``SQLAlchemyJobStore``) with these decisions:

* **Where jobs live** (:mod:`bot.scheduling.jobstore`): on SQLite, the scheduler's own file
  (``storage.jobs_path``, beside the history database; the store is synchronous and runs on the
  event loop, so it must never wait on the history database's locks). On PostgreSQL, the bot's
  own database (``apscheduler_jobs`` in the ``?schema=``): every replica opens it, so any of them
  can schedule, list and cancel, and no local file is written.
* **One leader fires** (:mod:`bot.scheduling.leader`): given a :class:`~bot.storage.coordination.
  Leases` (the app's store), only the replica holding the ``scheduler`` lease fires; the others
  stay paused and try to take the lease on every renewal tick (a fifth of ``lease_seconds``). A
  leader whose renewal fails or is refused pauses at once, and one whose lease ran short stops
  before the database could give it to anyone else. The leader looks at the store every
  ``poll_seconds`` for jobs other replicas added. Without ``leases`` (one process) it always fires.
* **A run is claimed before it fires** (a conditional delete or update of its row): even two
  processes that both believed they led could not fire one run twice.
* **Jobs reference ids, not live objects.** Every stored job calls
  ``"bot.scheduling.scheduler:_fire"`` with plain data ``(scheduler name, kind, job id, payload)``;
  the scheduler that claims a run starts the handler registered for ``kind`` (``_fire`` routes by
  name when called directly). Nothing pickled points at a plugin or a connection, so jobs outlive
  the process and code changes. A run whose kind has no handler (plugin not loaded) is logged and
  dropped.
* **A job that fell due while the bot was down runs at start** (on the leader):
  ``misfire_grace_time=None`` (run however late) and ``coalesce=True`` (missed runs of a
  repeating job run once).

**Exactly once, and where it stops.** A one-off run is removed from the store when it is
claimed, just before its handler starts. So a reminder fires once with any number of replicas,
and once when its leader is killed *before* it was due (the next leader finds it in the store
and fires it, late by up to ``lease_seconds`` plus a tick). A leader killed *while* a handler
runs (between the claim and the handler's end) has already removed the run: nobody retries it
(at most once at that instant). The reminders plugin keeps its own record, marked in flight,
until the message is sent: the next start of any replica sends such a reminder once the mark is
ten minutes old (see :mod:`plugins.reminders`).
"""
