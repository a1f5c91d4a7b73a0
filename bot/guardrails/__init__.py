"""What keeps a public bot safe and affordable: access, rates, budgets, admins, input, secrets."""
