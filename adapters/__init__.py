"""Adapters: the libraries people use, each entry point as one module obeying CONTRACT.md.

An adapter is a thin conversion, never a correction: it changes layout (PyTorch's (B, H, L, d), JAX's
(B, L, N, d)), mask polarity and weight orientation as the library's documentation says a user must,
calls the installed library, and copies none of its code. What the library cannot express, the adapter
declares with `OutOfScope` (CONTRACT.md, "Declared scope"), never by failing. What the library does
differently from the contract (causal alignment, a query that sees no key, a float mask) is left as the
library does it: that is what the spec is run to find (docs/libraries.md).

    pip install -e ".[libraries]" -c constraints.txt
    pytest --impl adapters.torch_sdpa                 # one library
    pytest --impl adapter:all                         # every adapter whose library is installed
"""
