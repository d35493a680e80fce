"""The wire formats the proxy speaks, one module each: read a request, write a reply (whole or as SSE), word an
error in the format's own shape.

- :mod:`.chat`: OpenAI chat completions (``/v1/chat/completions``), streamed or not;
- :mod:`.responses`: OpenAI Responses (``/v1/responses``), streamed or not;
- :mod:`.messages`: Anthropic Messages (``/v1/messages``, ``/v1/messages/count_tokens``), streamed or not;
- :mod:`.gemini`: Gemini (``/v1beta/models/M:streamGenerateContent``, ``:generateContent``, ``:countTokens``).
"""
