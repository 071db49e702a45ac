"""At import, a double-forked daemon (its own session, its parent gone) that writes a file into /tmp, /var/tmp
and /dev/shm every 50 ms, forever. The honest part is whole: its twin is the control (full marks). After
grading, neither the daemon nor any of its files may remain."""
import os
import sys

from tests.hostile._honest import *  # noqa: F401,F403
from tests.hostile._honest import correct_layer_norm

layer_norm = correct_layer_norm
MARKER = "mha-spec-hostile-daemon-marker"
WRITER = """
import os, sys, time
n = 0
while True:
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        try:
            with open(os.path.join(folder, f"mha-spec-hostile-daemon-{os.getpid()}-{n % 50}"), "w") as f:
                f.write("still here")
        except OSError:
            pass
    n += 1
    time.sleep(0.05)
"""

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", WRITER, MARKER])
    os._exit(0)
