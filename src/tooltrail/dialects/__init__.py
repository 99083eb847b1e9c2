"""Where instrumentations put a tool call: one small reader per convention, tried in order.

Only this package knows instrumentation attribute names, all of them in one data file,
``rules.json`` (docs/dialect-rules.md), read once at import by ``rules``. ``classify`` /
``read_tool_call`` run on every span of the live path and of every dump, so a span that is
not a tool call is turned away after a lookup of its name and a set test over its attribute
keys (``roles``).
Readers of tool spans are in ``tools``, of agent and model spans in ``spans``. See
docs/convert.md for the table as implemented and how to add a dialect.
"""

from __future__ import annotations

from tooltrail.dialects.roles import (
    BY_MARKER,
    BY_SPAN_NAME,
    EXECUTE_TOOL_PREFIX,
    INTEREST,
    ROLE_AGENT,
    ROLE_EXCLUDED,
    ROLE_MODEL,
    ROLE_OTHER,
    ROLE_TOOL,
    ROLE_WORKFLOW,
    classify,
    is_agent_span,
    is_model_span,
    read_tool_call,
)
from tooltrail.dialects.spans import (
    CASE_ID_KEY,
    CONVERSATION_KEYS,
    ModelCall,
    agent_name,
    agent_reply,
    asked_for_tools,
    conversation_id,
    exception_message,
    is_content_attribute,
    label_keys,
    model_calls,
    model_output,
    model_reply,
)
from tooltrail.dialects.tools import DialectCall

__all__ = [
    "BY_MARKER",
    "EXECUTE_TOOL_PREFIX",
    "INTEREST",
    "ROLE_AGENT",
    "ROLE_EXCLUDED",
    "ROLE_MODEL",
    "ROLE_OTHER",
    "ROLE_TOOL",
    "ROLE_WORKFLOW",
    "classify",
    "BY_SPAN_NAME",
    "CASE_ID_KEY",
    "CONVERSATION_KEYS",
    "DialectCall",
    "ModelCall",
    "agent_name",
    "agent_reply",
    "asked_for_tools",
    "conversation_id",
    "exception_message",
    "is_agent_span",
    "is_content_attribute",
    "label_keys",
    "is_model_span",
    "model_calls",
    "model_output",
    "model_reply",
    "read_tool_call",
]
