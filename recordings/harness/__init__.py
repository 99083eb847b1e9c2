"""The recording harness: a scripted OpenAI-compatible model on loopback, the scenarios' tools
and scripts, and the writer of OTLP files and truth files.

A framework's recording script (``recordings/record_*.py``) runs the framework, instrumented
by its own OpenTelemetry instrumentation, against the scripted model; the truth file says what
the script made the model ask for and what the tools returned, never what tooltrail reads.
"""
