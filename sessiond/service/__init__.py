"""The live engine, transport-agnostic: open sessions, subscriptions, usage, the API methods.

``Service`` is what every transport calls; the ``SessionRegistry`` below it holds the open
sessions (one ``SessionHost`` each) and their users, which the compactor, file history and
the follower work through; a ``SessionHost`` publishes what changes in its session through
the ``Hub`` to every subscribed ``Peer``.
"""
