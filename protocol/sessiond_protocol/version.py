PROTOCOL_VERSION = 1
"""Bumped on incompatible changes; ``initialize`` answers with it."""
