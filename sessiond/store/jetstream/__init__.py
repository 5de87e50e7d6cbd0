"""The JetStream store backend: sessions shared by daemons on several hosts (docs/scale-out.md).

``settings`` has no dependency; ``link``, ``log`` and ``store`` need the ``nats`` extra
(``pip install 'sessiond[nats]'``) and are imported only when the config selects JetStream.
"""
