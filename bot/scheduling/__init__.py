"""Jobs and work fired later or elsewhere; plugins get the scheduler from :mod:`bot.plugins`.

* :mod:`.scheduler` -- the scheduler plugins schedule jobs on (reminders and the like);
* :mod:`.inbox` -- one replica's share of the platform inbox: claim lane heads, run them,
  keep the leases;
* :mod:`.jobstore` -- where jobs live (their own SQLite file, or the bot's PostgreSQL database)
  and how a due run is *claimed* there before it fires;
* :mod:`.runner` -- apscheduler's loop, made to fire only while this replica may;
* :mod:`.leader` -- the lease that makes one replica at a time the one that fires.
"""
