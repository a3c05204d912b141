"""Domain decisions: validation beyond shape, state changes, events."""
