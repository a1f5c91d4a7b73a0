"""The scheduler's parts; plugins use :mod:`bot.scheduler`.

* :mod:`.jobstore` -- where jobs live (their own SQLite file, or the bot's PostgreSQL database)
  and how a due run is *claimed* there before it fires;
* :mod:`.runner` -- apscheduler's loop, made to fire only while this replica may;
* :mod:`.leader` -- the lease that makes one replica at a time the one that fires.
"""
