"""A scripted LLM provider that validates requests as Anthropic's and OpenAI's
APIs do, and a recording relay in front of whatever the test points it at.
See ../provider.py for how it is started and what it serves."""
