"""Core War domain for DEI."""
