"""The review gate: requests the guard holds for a human, and their decisions."""
