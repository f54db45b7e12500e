"""What the response side judges: a tool call the model asks the agent to run, and its context.

Sans-IO types shared by the response editors (which find the calls in a
provider's answer) and the guardian (which judges them). The context comes
from the request that produced the answer: the guardian reads the user's own
words from it to tell whether the user asked for the action.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call as the model sent it, once every fragment of it has arrived."""

    # The tool's name as the model called it (for a Responses API built-in
    # such as local_shell_call, the item type without "_call").
    name: str
    # The argument text exactly as sent: JSON for function tools, free text for
    # custom tools, the action object's JSON for built-in tools.
    arguments: str
    # The provider's id for the call (call_..., toolu_...); may be empty.
    call_id: str = ""
    # function, custom, or the built-in's item type (local_shell_call, ...).
    kind: str = "function"

    def parsed(self) -> object:
        """The arguments as JSON, or None when they are not JSON."""
        try:
            return json.loads(self.arguments)
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class Message:
    """One message of the conversation, reduced to its text, for the guardian's transcript."""

    role: str  # user, assistant, tool (a tool's result), system
    text: str


@dataclass(frozen=True, slots=True)
class Conversation:
    """The request's conversation as the guardian sees it."""

    # The text the user typed in the last user message: never a tool result
    # (Anthropic carries those in user messages too). None when there is none.
    last_user: str | None
    # The messages in order; a transcript for the LLM guardian, untrusted evidence.
    messages: tuple[Message, ...] = ()
    # The conversation up to and including its last user message, in canonical
    # form: with the team and agent key it names the turn for the circuit breaker.
    turn_digest: str = ""


NO_CONVERSATION = Conversation(last_user=None)
