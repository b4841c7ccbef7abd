"""DEI core."""
