"""Built-in plugins ship here; plugins are loaded by dotted name from config."""
