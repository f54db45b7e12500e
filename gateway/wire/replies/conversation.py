"""The conversation of a request, as the guardian reads it when judging the answer's calls.

The three request formats say the same things differently: Chat Completions
``messages`` (tool results as role ``tool``), Anthropic ``messages`` (tool
results as ``tool_result`` blocks inside user messages, which are not the
user's words) and the Responses API ``input`` (a string, or items where tool
results are ``function_call_output``). Only text the user typed counts as the
user's: the last such message is what can authorize a risky call.
"""

from __future__ import annotations

from typing import Any

from gateway.canonical import digest
from gateway.wire.calls import Conversation, Message
from gateway.wire.replies.base import arguments_text

_SYSTEM = frozenset({"system", "developer"})
_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
_CALL_ITEMS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "shell_call"})


def _parts_text(content: object) -> tuple[str, str]:
    """(the text parts, the tool results) of a message's content."""
    if isinstance(content, str):
        return content, ""
    texts: list[str] = []
    results: list[str] = []
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind == "tool_result":
                results.append(_parts_text(part.get("content"))[0])
            elif kind == "tool_use":
                texts.append(f"[call {part.get('name')}] {arguments_text(part.get('input'))}")
    return "\n".join(texts), "\n".join(results)


def _chat_like(messages: list[Any], system: object) -> list[Message]:
    out: list[Message] = []
    if system is not None:
        text, _ = _parts_text(system)
        if text:
            out.append(Message("system", text))
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        text, results = _parts_text(message.get("content"))
        if results:
            out.append(Message("tool", results))
        if role in _SYSTEM:
            out.append(Message("system", text))
        elif role == "user":
            if text:
                out.append(Message("user", text))
        elif role == "assistant":
            for call in message.get("tool_calls") or ():
                if isinstance(call, dict) and isinstance(call.get("function"), dict):
                    fn = call["function"]
                    text += f"\n[call {fn.get('name')}] {arguments_text(fn.get('arguments'))}"
            out.append(Message("assistant", text.strip()))
        else:
            out.append(Message("tool", text))
    return out


def _responses(payload: dict[str, Any]) -> list[Message]:
    out: list[Message] = []
    if isinstance(payload.get("instructions"), str):
        out.append(Message("system", payload["instructions"]))
    items = payload.get("input")
    if isinstance(items, str):
        return [*out, Message("user", items)]
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message" or ("role" in item and "type" not in item):
            role = item.get("role")
            text, _ = _parts_text(item.get("content"))
            name = (
                "system" if role in _SYSTEM else role if role in ("user", "assistant") else "tool"
            )
            out.append(Message(str(name), text))
        elif kind in _CALL_ITEMS:
            args = item.get("arguments", item.get("input", item.get("action")))
            out.append(Message("assistant", f"[call {item.get('name')}] {arguments_text(args)}"))
        elif isinstance(kind, str) and kind.endswith("_output"):
            output = item.get("output")
            out.append(
                Message("tool", output if isinstance(output, str) else arguments_text(output))
            )
    return out


def conversation_of(payload: object) -> Conversation:
    """The conversation a request carries; empty for a request that has none."""
    if not isinstance(payload, dict):
        return Conversation(last_user=None)
    if isinstance(payload.get("messages"), list):
        messages = _chat_like(payload["messages"], payload.get("system"))
    elif "input" in payload:
        messages = _responses(payload)
    else:
        return Conversation(last_user=None)
    last = None
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            last = i
            break
    if last is None:
        return Conversation(None, tuple(messages), "")
    turn = digest([[m.role, m.text] for m in messages[: last + 1]])
    return Conversation(messages[last].text, tuple(messages), turn)
