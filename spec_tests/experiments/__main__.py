"""python -m spec_tests.experiments [--reduced] [--only NAME] [--out DIR]: regenerate docs/generated/."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy loads BLAS: steadier CPU times
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from spec_tests.experiments import FULL, GENERATED, sizes  # noqa: E402


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m spec_tests.experiments", description=__doc__)
    p.add_argument("--reduced", action="store_true", help="the smaller runs CI makes")
    p.add_argument("--only", choices=sorted(FULL), action="append", help="run only these experiments")
    p.add_argument("--out", type=Path, default=GENERATED, help=f"output folder (default {GENERATED})")
    opts = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # the seeded runs are reproducible on one thread
    for name in opts.only or sorted(FULL):
        size = sizes(name, opts.reduced)
        start = time.perf_counter()
        if name == "heads":
            from spec_tests.experiments import heads

            results = heads.run(**size)
            heads.write(results, heads.Setup(), opts.out)
            if opts.out == GENERATED:  # the docs' run also refreshes the models the fast MHA-8 test loads
                heads.save_trained(results)
        elif name == "norm_placement":
            from spec_tests.experiments import norm_placement

            norm_placement.write(norm_placement.run(**size), norm_placement.Setup(), opts.out)
        else:
            from spec_tests.experiments import complexity

            complexity.write(*complexity.run(**size), opts.out)
        print(f"{name}: wrote {opts.out} in {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
