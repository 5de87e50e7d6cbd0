"""Session file dialects, each mapped onto the one model in :mod:`sessiond.model`."""
