"""Reference transports for DEI."""
