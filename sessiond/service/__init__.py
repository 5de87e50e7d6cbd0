"""The live engine, transport-agnostic: open sessions, subscriptions, usage, the API methods.

``Service`` is what every transport calls; ``SessionHost`` owns one open session and
publishes what changes in it through the ``Hub`` to every subscribed connection.
"""
