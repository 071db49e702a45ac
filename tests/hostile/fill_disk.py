"""layer_norm writes 60 MB files into the temporary folder and /tmp until the disk refuses, and lets the error
out; its twin, raise_in_layer_norm, raises at once. The worker's disk quota must refuse, not the machine's."""
import os
import tempfile

from tests.hostile._honest import *  # noqa: F401,F403

CHUNK = b"\0" * (60 * 2**20)


def layer_norm(x, gamma, beta, eps=1e-5):
    for folder in (tempfile.gettempdir(), "/tmp", "/var/tmp"):
        for i in range(12):  # 720 MB a folder: well over the quota, bounded where there is none
            with open(os.path.join(folder, f"mha-spec-hostile-fill-{os.getpid()}-{i}"), "wb") as f:
                f.write(CHUNK)
    raise RuntimeError("the disk never refused")
