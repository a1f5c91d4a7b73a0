"""Long-term memory: recalled facts and old messages, their scopes, search, summaries."""
