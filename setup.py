"""The compiled modules; everything else about the package is in pyproject.toml.

All are optional: without a C compiler the install goes on and the gateway
runs their Python twins, with the same results. They are the injection
detector's word scan, its rule index's test of which alternatives can
match and its search for encoded runs, the first step of
unwrapping (the gate that lets plainly clean text through), the secret
scan's prefilter, the fast JSON reader's count of ':' bytes, the walk of a chat
request's common messages into segments, the canonical encoder's check
of plain values, and the test
of whether an answer's bytes can name a tool call.
(setup.py rather than pyproject's ext-modules table, which setuptools still
calls experimental.)
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "gateway.guard.detectors.injection._wordset",
            ["gateway/guard/detectors/injection/_wordset.c"],
            optional=True,
        ),
        Extension(
            "gateway.guard.detectors.injection._ways",
            ["gateway/guard/detectors/injection/_ways.c"],
            optional=True,
        ),
        Extension(
            "gateway.guard.detectors.injection._blobs",
            ["gateway/guard/detectors/injection/_blobs.c"],
            include_dirs=["gateway"],
            depends=["gateway/_rows.h"],
            optional=True,
        ),
        Extension(
            "gateway.guard.detectors._unwrap_gate",
            ["gateway/guard/detectors/_unwrap_gate.c"],
            include_dirs=["gateway"],
            depends=["gateway/_ascii.h", "gateway/_rows.h"],
            optional=True,
        ),
        Extension(
            "gateway.guard.detectors.secrets._anchors",
            ["gateway/guard/detectors/secrets/_anchors.c"],
            include_dirs=["gateway"],
            depends=["gateway/_ascii.h"],
            optional=True,
        ),
        Extension("gateway.wire._colons", ["gateway/wire/_colons.c"], optional=True),
        Extension("gateway.wire._chat", ["gateway/wire/_chat.c"], optional=True),
        Extension("gateway._plain", ["gateway/_plain.c"], optional=True),
        Extension("gateway.wire.replies._names", ["gateway/wire/replies/_names.c"], optional=True),
    ]
)
