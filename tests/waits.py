"""How long a test waits on a real ``python -m bot`` process: a bound on failure, not speed.

Speed lives in ``bench/`` (section 12 times start-up). These bounds only decide when a test gives
up, so they are set for the slowest machine the suite runs on: CI's 2 cores running four xdist
workers, several of them starting interpreters at once, once took over 30 s from spawn to the
bot's first poll. A passing test never waits this long; a hung one fails with its output.
"""

STARTUP = 120.0  # spawn -> first poll (or the first line a test waits for)
TURN = 60.0  # a message in -> the answer out, in a process sharing the machine with others
EXIT = 60.0  # SIGTERM or end of input -> the process has exited
SLOW_TIMEOUT = 600.0  # the time limit of a `slow` test (tests/conftest.py): room for its processes
