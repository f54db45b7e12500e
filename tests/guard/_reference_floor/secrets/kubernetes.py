"""Kubernetes Secret manifests: the values under ``data:`` and ``stringData:``."""

from __future__ import annotations

import base64
import binascii
import re

from tests.guard._reference_floor.secrets.assigned_values import _value_ok
from tests.guard._reference_floor.secrets.common import _A, _PRIO_CONTEXT, _Ctx
from tests.guard._reference_floor.secrets.names import _PW
from tests.guard._reference_floor.secrets.values import _is_placeholder

_K8S_DATA_RE = re.compile(r"^([ \t]*)(data|stringData):[ \t]*\r?$", re.M | _A)
_K8S_ITEM_RE = re.compile(
    r"^([ \t]+)[A-Za-z0-9_.\-]{1,253}:[ \t]*"
    r"(?:([|>][-+]?)[ \t]*\r?$|[\"']?([^\s\"'#]{1,8192})[\"']?[ \t]*\r?$)",
    re.M | _A,
)


def _k8s_secret(ctx: _Ctx, kind_line: int) -> None:
    """Values under data: / stringData: of the `kind: Secret` document.

    A document is read once, however many `kind: Secret` lines it holds; the
    search for its start stops at the end of the last document read.
    """
    text = ctx.text
    if kind_line < ctx.k8s_until:
        return
    doc_start = max(text.rfind("\n---", max(0, ctx.k8s_until), kind_line), 0)
    doc_end = text.find("\n---", kind_line)
    doc_end = len(text) if doc_end < 0 else doc_end
    ctx.k8s_until = doc_end
    for dm in _K8S_DATA_RE.finditer(text, doc_start, doc_end):
        indent = len(dm.group(1).expandtabs(4))
        string_data = dm.group(2) == "stringData"
        pos = dm.end() + 1
        while pos < doc_end:
            im = _K8S_ITEM_RE.match(text, pos, doc_end)
            if im is None or len(im.group(1).expandtabs(4)) <= indent:
                break
            pos = im.end() + 1
            if im.group(2) is not None:
                pos = _k8s_block(ctx, im, pos, doc_end)
                continue
            v = im.group(3)
            ok = _value_ok(v, _PW, True) if string_data else _k8s_b64_ok(v)
            if ok:
                ctx.add(im.start(3), im.end(3), "kubernetes_secret", _PRIO_CONTEXT)


def _k8s_block(ctx: _Ctx, im: re.Match[str], pos: int, doc_end: int) -> int:
    """A block scalar value: the following lines indented deeper than its key."""
    text = ctx.text
    child = len(im.group(1).expandtabs(4))
    vs = pos
    while pos < doc_end:
        eol = text.find("\n", pos, doc_end)
        eol = doc_end if eol < 0 else eol
        line = text[pos:eol]
        if line.strip() and len(line) - len(line.lstrip(" \t")) <= child:
            break
        pos = eol + 1
    ve = min(pos, doc_end)
    if len("".join(text[vs:ve].split())) >= 12:
        ctx.add(vs, ve, "kubernetes_secret", _PRIO_CONTEXT)
    return pos


def _k8s_b64_ok(v: str) -> bool:
    try:
        raw = base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        return False
    return len(raw) >= 6 and not _is_placeholder(raw.decode("latin-1").strip())
