"""Platform adapters. Each module exposes ``create_adapter(platform)``, given the seam
(:class:`bot.platform.seam.Platform`); config names them."""
