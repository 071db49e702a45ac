"""layer_norm fills /dev/shm (shared memory, a tmpfs the size of half the machine's memory) with 60 MB files
until refused, and lets the error out; its twin, raise_in_layer_norm, raises at once."""
import os

from tests.hostile._honest import *  # noqa: F401,F403

CHUNK = b"\0" * (60 * 2**20)


def layer_norm(x, gamma, beta, eps=1e-5):
    for i in range(12):
        with open(f"/dev/shm/mha-spec-hostile-shm-{os.getpid()}-{i}", "wb") as f:
            f.write(CHUNK)
    raise RuntimeError("/dev/shm never refused")
