"""One conversation: admission, prompt, the model and its tools, the stored turn."""
