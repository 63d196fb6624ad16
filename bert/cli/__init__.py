"""The commands: flags and a short main() each (the root scripts run these)."""
