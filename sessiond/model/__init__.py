"""The pure domain layer: entries and messages, the tree, projection, token estimates.

No I/O and no asyncio here; everything above (formats, store, service) builds on it.
"""
