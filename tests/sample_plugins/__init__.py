"""Plugins used by the tests: well-behaved, slow, admin-only, and broken ones."""
