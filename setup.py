"""The one compiled module; everything else about the package is in pyproject.toml.

The injection detector's word scan in C is optional: without a C compiler the
install goes on and the detector scans in Python, with the same verdicts.
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
        )
    ]
)
