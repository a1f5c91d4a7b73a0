"""Platform adapters. Each module exposes ``create_adapter(app)``; config names them."""
