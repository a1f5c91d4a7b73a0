"""The fake OpenAI-compatible server (``FakeLLM``); its public path is ``bot.testing.fake_llm``."""
