"""Which adapter reads which path."""

from __future__ import annotations

import pytest

from gateway.wire import anthropic, generic, openai_assistants, openai_chat, openai_responses
from gateway.wire.routes import Adapter, adapter_for, is_streaming_request


@pytest.mark.parametrize(
    ("path", "adapter"),
    [
        ("/v1/chat/completions", openai_chat.segments),
        ("/chat/completions", openai_chat.segments),
        ("/v1/chat/completions/", openai_chat.segments),
        ("/v1/chat/completions?api-version=2024-10-21", openai_chat.segments),
        ("/openai/deployments/gpt-4o/chat/completions", openai_chat.segments),
        ("/api/v1/chat/completions", openai_chat.segments),
        ("chat/completions", openai_chat.segments),
        # Variants a lenient upstream routes to the same endpoint.
        ("/v1/Chat/Completions", openai_chat.segments),
        ("/v1//chat///completions", openai_chat.segments),
        ("/v1/chat/completions;jsessionid=1", openai_chat.segments),
        ("/v1/chat;x=1/completions", openai_chat.segments),
        ("/V1/MESSAGES", anthropic.segments),
        ("/v1/Responses", openai_responses.segments),
        ("/v1/chat/completions/chatcmpl-123", generic.segments),
        ("/v1/chat/completions/chatcmpl-123/messages", generic.segments),
        ("/v1/completions", generic.segments),
        ("/v1/responses", openai_responses.segments),
        ("/responses", openai_responses.segments),
        ("/openai/v1/responses/", openai_responses.segments),
        ("/v1/responses/input_tokens", openai_responses.segments),
        ("/v1/responses/compact", openai_responses.segments),
        ("/v1/responses/resp_123", generic.segments),
        ("/v1/responses/resp_123/cancel", generic.segments),
        ("/v1/responses/resp_123/input_items", generic.segments),
        ("/v1/messages", anthropic.segments),
        ("/v1/messages?beta=true", anthropic.segments),
        ("/messages", anthropic.segments),
        ("/v1/messages/count_tokens", anthropic.segments),
        ("/v1/messages/count_tokens?beta=true", anthropic.segments),
        # requests inside requests: each is read by its own adapter
        ("/v1/messages/batches", anthropic.batch_segments),
        ("/v1/messages/batches/", anthropic.batch_segments),
        ("/messages/batches", anthropic.batch_segments),
        ("/v1/Messages//Batches;x", anthropic.batch_segments),
        ("/v1/messages/batches/msgbatch_1/cancel", generic.segments),
        ("/v1/threads", openai_assistants.thread_segments),
        ("/v1/threads/runs", openai_assistants.run_segments),
        ("/v1/threads/thread_1/messages", openai_assistants.message_segments),
        ("/v1/threads/thread_1/runs", openai_assistants.run_segments),
        (
            "/v1/threads/thread_1/runs/run_1/submit_tool_outputs",
            openai_assistants.tool_outputs_segments,
        ),
        (
            "/openai/threads/thread_1/runs/run_1/submit_tool_outputs?api-version=2024-05-01",
            openai_assistants.tool_outputs_segments,
        ),
        ("/v1/Threads/thread_1//Runs", openai_assistants.run_segments),
        ("/v1/threads/thread_1", generic.segments),
        ("/v1/threads/thread_1/messages/msg_1", generic.segments),
        ("/v1/threads/thread_1/runs/run_1", generic.segments),
        ("/v1/threads/thread_1/runs/run_1/cancel", generic.segments),
        ("/v1/assistants", generic.segments),
        ("/v1/batches", generic.segments),
        ("/v1/conversations", openai_responses.conversation_segments),
        ("/v1/conversations/conv_1/items", openai_responses.conversation_segments),
        ("/v1/conversations/conv_1", generic.segments),
        ("/v1/conversations/conv_1/items/msg_1", generic.segments),
        ("/v1/embeddings", generic.segments),
        ("/v1/moderations", generic.segments),
        ("/v1/files", generic.segments),
        ("", generic.segments),
        ("/", generic.segments),
    ],
)
def test_adapter_for(path: str, adapter: Adapter) -> None:
    assert adapter_for(path) is adapter


@pytest.mark.parametrize(
    ("payload", "streaming"),
    [
        ({"stream": True}, True),
        ({"stream": False}, False),
        ({"stream": "true"}, False),
        ({"stream": 1}, False),
        ({}, False),
        ([{"stream": True}], False),
        (None, False),
    ],
)
def test_is_streaming_request(payload: object, streaming: bool) -> None:
    assert is_streaming_request(payload) is streaming
