"""`--isolate`: the same outcomes as an in-process run, a confined worker, and a wire that trusts nothing."""

import os
import textwrap

import numpy as np
import pytest

from spec_tests.sandbox import isolation, wire
from tests.helpers import ROOT, run_suite

# Claims whose tests use every path into the worker: plain calls, native arrays (inputs unmodified,
# output dtype, determinism), autograd through a causal mask (torch), bad input raising ValueError.
CLAIMS = "SDPA-1,MASK-2,ERR-1,ERR-2"


@pytest.mark.parametrize("builtin", ["numpy_fast", "torch_sdpa"])
def test_isolated_and_in_process_runs_agree(builtin, tmp_path):
    outcomes = []
    for flag in ([], ["--isolate"]):
        code, out, report = run_suite("--impl", builtin, "--claim", CLAIMS, *flag, report=tmp_path / f"r{len(flag)}.json")
        assert report is not None, out[-3000:]
        outcomes.append({t["nodeid"]: t["outcome"] for t in report["tests"]})
    plain, isolated = outcomes
    assert plain == isolated, {k: (plain.get(k), isolated.get(k)) for k in set(plain) | set(isolated)
                               if plain.get(k) != isolated.get(k)}
    if builtin == "torch_sdpa":  # the autograd test really ran across the boundary
        grads = [o for k, o in isolated.items() if "no_gradient_from_future" in k]
        assert grads and set(grads) == {"passed"}, grads


@pytest.mark.skipif(os.geteuid() != 0, reason="the worker drops to its own user only when the suite runs as root")
def test_the_worker_is_confined(tmp_path):
    """Own user, the suite read-only, no network, its own scratch folder."""
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent(f'''
        import os, socket
        import numpy as np
        BACKEND = "numpy"

        def _can(action):
            try:
                action()
                return 1.0
            except OSError:
                return 0.0

        def layer_norm(x, gamma, beta, eps=1e-5):
            return np.array([os.getuid(), os.getgid(), len(os.getgroups()),
                             _can(lambda: open({str(ROOT / "spec_tests" / "test_sdpa.py")!r}, "a").close()),
                             _can(lambda: open("probe-scratch.txt", "w").close()),
                             len([n for _, n in socket.if_nameindex() if n != "lo"]),
                             float(os.getcwd().startswith("/tmp/" + {isolation.SCRATCH_PREFIX!r}))])
    '''))
    impl = isolation.load(str(probe), isolation.Limits())
    try:
        subject = isolation.IsolatedSubject(impl, "float64")
        uid, gid, groups, suite, scratch, network, cwd = subject.layer_norm(np.ones(2), np.ones(2), np.zeros(2))
    finally:
        isolation.shutdown()
    assert uid >= isolation.UID_RANGE.start and gid == uid and groups == 0
    assert suite == 0, "the worker could write into the suite"
    assert scratch == 1 and cwd == 1, "the worker should work in a scratch folder of its own"
    assert network == 0, "the worker sees network interfaces: it should be in an empty network namespace"


def test_wire_round_trip_and_refusals():
    value = {"args": (np.arange(6.0).reshape(2, 3), np.array([True, False]), 3, None, 0.5),
             "kwargs": {"mask": np.ones((1, 2), dtype=bool), "s": slice(1, None)}}
    back = wire.decode(wire.encode(value)[8:])
    assert back["args"][0].dtype == np.float64 and np.array_equal(back["args"][0], value["args"][0])
    assert back["args"][2:] == (3, None, 0.5) and back["kwargs"]["s"] == slice(1, None)
    with pytest.raises(TypeError):
        wire.encode(np.array([object()]))  # object arrays would need pickle
    forged = wire.encode({"x": np.zeros(2)})[8:].replace(b'"<f8"', b'"|O8"')
    with pytest.raises(wire.WireError, match="refused"):
        wire.decode(forged)
    with pytest.raises(wire.WireError):
        wire.decode(b"\xff\xff\xff\x7fnot json")


GUARD_PROBE = '''
import json, sys
from spec_tests.sandbox import guard
guard.install(["torch.nn.functional.layer_norm"], [])
audit = sys.audit  # as the worker captures it, before the implementation is imported
import torch
x = torch.rand(2, 4, dtype=torch.float64)

def run(fn):
    hits = []
    guard.watch(audit, hits, fn)
    return hits

print(json.dumps({
    "alias": run(lambda: torch.ops.aten.layer_norm(x, [4])),
    "overload": run(lambda: torch.ops.aten.native_layer_norm.default(x, [4], None, None, 1e-5)),
    "private": run(lambda: torch.native_layer_norm(x, [4], None, None, 1e-5)),
    "module": run(lambda: torch.nn.LayerNorm(4).double()(x)),
    "by_hand": run(lambda: (x - x.mean(-1, keepdim=True)) / (x.var(-1, keepdim=True) + 1e-5).sqrt()),
    "popped": run(lambda: [torch._C._pop_torch_dispatch_stack(None), torch.ops.aten.layer_norm(x, [4])]),
    "after": run(lambda: torch.ops.aten.layer_norm(x, [4])),
}))
'''


def test_a_ban_holds_at_the_dispatcher_whatever_name_reaches_the_operator():
    """The watch sees the operator behind a banned function by any route, and a popped watch is tampering."""
    pytest.importorskip("torch")
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", GUARD_PROBE], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    hits = json.loads(proc.stdout.strip().splitlines()[-1])
    for route in ("alias", "overload", "private", "module", "after"):
        assert hits[route], f"{route}: the banned operator was not seen"
    assert hits["by_hand"] == [], f"LayerNorm written by hand uses nothing banned: {hits['by_hand']}"
    assert any("tampering" in h for h in hits["popped"]), hits["popped"]
