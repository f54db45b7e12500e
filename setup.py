"""The compiled modules; everything else about the package is in pyproject.toml.

All are optional: without a C compiler the install goes on and the gateway
runs their Python twins, with the same results. They are the injection
detector's word scan, its rule index's test of which alternatives can
match and its search for encoded runs, the first step of
unwrapping (the gate that lets plainly clean text through), the secret
scan's prefilter, the fast JSON reader's proof (':' counted in the value
it read), the walk of a chat request's common messages into segments, the
canonical encoder's check of plain values, and the test of whether an
answer's bytes can name a tool call.
(setup.py rather than pyproject's ext-modules table, which setuptools still
calls experimental.)

The request path's typed Python modules are compiled too, by mypyc, from the
same source: the guard pipeline and its caches, the injection detector's
rules, the secret scan's engine, the reverse proxy's handler, the exchange,
the headers, the team match, the metrics and the segment type. Their
`.py` files stay the reference, and REEFGATE_NO_EXTENSION=1 runs them
instead (see `gateway/compiled.py`). REEFGATE_NO_MYPYC=1 at install time
skips this step.
"""

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Compiled by mypyc. Left out on purpose: modules whose functions or
# methods tests and `bench/ablated.py` replace at run time (a compiled
# caller would not see the replacement: `floor`; `detectors/builtin` is
# compiled and reaches the detectors' functions through their modules), the
# protocol in `detectors/base`, and modules that mypyc does not compile
# (exceptions subclassing builtins other than the few it takes), and
# `proxy/entrance`, whose route handlers aiohttp takes only as coroutine
# functions, which a compiled function is not. A class that interpreted
# modules subclass is defined in an interpreted one (`wire/payload_error`):
# compiled code matches a compiled class by its exact type. The proxy handler reaches
# the guard through a protocol (`reverse.Checks`) and the body's parser
# through a module attribute (`reverse.request_segments`), so its calls go
# by name and the ablation's replacements take effect.
TYPED = [
    "gateway/config/teams.py",
    "gateway/guard/allowances.py",
    "gateway/guard/cache.py",
    "gateway/guard/decision.py",
    "gateway/guard/findings.py",
    "gateway/guard/pipeline.py",
    "gateway/guard/verdict.py",
    "gateway/guard/detectors/builtin.py",
    "gateway/guard/detectors/injection/assess.py",
    "gateway/guard/detectors/injection/decoders.py",
    "gateway/guard/detectors/injection/gates.py",
    "gateway/guard/detectors/injection/hidden.py",
    "gateway/guard/detectors/injection/literals.py",
    "gateway/guard/detectors/injection/model.py",
    "gateway/guard/detectors/injection/phrases.py",
    "gateway/guard/detectors/injection/templates.py",
    "gateway/guard/detectors/injection/text.py",
    "gateway/guard/detectors/injection/verdict.py",
    "gateway/guard/detectors/secrets/engine.py",
    "gateway/observe/metrics.py",
    "gateway/proxy/exchange.py",
    "gateway/proxy/middleware.py",
    "gateway/proxy/relay.py",
    "gateway/proxy/reverse.py",
    "gateway/proxy/turns.py",
    "gateway/proxy/upstream.py",
    "gateway/wire/base.py",
    "gateway/wire/body.py",
    "gateway/wire/content.py",
    "gateway/wire/generic.py",
    "gateway/wire/jsontext.py",
    "gateway/wire/openai_chat.py",
    "gateway/wire/replies/base.py",
    "gateway/wire/replies/chat.py",
    "gateway/wire/routes.py",
    "gateway/wire/sse.py",
]
# The group's shared library; each module of TYPED gets a small extension
# that loads its part of it.
NATIVE = "gateway._native__mypyc"
# Declares mypyc's error helpers cold (see the header).
_COLD_HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gateway", "_cold.h")
# The build environment has mypy but not the gateway's dependencies, so
# their types are unknown (Any) here; `mypy gateway` in CI checks them.
_BUILD_FLAGS = [
    "--ignore-missing-imports",
    "--allow-subclassing-any",
    "--allow-untyped-decorators",
    "--no-warn-return-any",
    "--no-warn-unused-ignores",
]


def typed_modules() -> list[Extension]:
    if os.environ.get("REEFGATE_NO_MYPYC", "").strip() not in ("", "0"):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        return []
    extensions: list[Extension] = mypycify(
        [*_BUILD_FLAGS, *TYPED], group_name=NATIVE.removesuffix("__mypyc"), opt_level="3"
    )
    for extension in extensions:
        # Without a C compiler the gateway runs the same modules as Python.
        extension.optional = True
        if extension.name == NATIVE:
            extension.extra_compile_args.extend(["-include", _COLD_HEADER])
    return extensions


class BuildExt(build_ext):
    """The group's library first; its modules' extensions only if it was built.

    Every extension is optional, so a failed build leaves the Python; but a
    module's extension without the library would fail at import, and the
    gateway with it.
    """

    native_built = False

    def build_extensions(self) -> None:
        self.extensions.sort(key=lambda ext: ext.name != NATIVE)
        super().build_extensions()

    def build_extension(self, ext: Extension) -> None:
        typed = ext.name != NATIVE and ext.name.replace(".", "/") + ".py" in TYPED
        if typed and not self.native_built:
            print(f"skipping {ext.name}: {NATIVE} was not built")
            return
        super().build_extension(ext)
        if ext.name == NATIVE:
            self.native_built = True


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=[
        Extension(
            "gateway.guard.detectors.injection._wordset",
            ["gateway/guard/detectors/injection/_wordset.c"],
            include_dirs=["gateway"],
            depends=["gateway/_ascii.h", "gateway/guard/detectors/injection/_listed.h"],
            optional=True,
        ),
        Extension(
            "gateway.guard.detectors.injection._ways",
            ["gateway/guard/detectors/injection/_ways.c"],
            depends=["gateway/guard/detectors/injection/_listed.h"],
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
        Extension("gateway.wire._spans", ["gateway/wire/_spans.c"], optional=True),
        Extension("gateway.wire._chat", ["gateway/wire/_chat.c"], optional=True),
        Extension("gateway._plain", ["gateway/_plain.c"], optional=True),
        Extension("gateway.wire.replies._names", ["gateway/wire/replies/_names.c"], optional=True),
        *typed_modules(),
    ],
)
