"""The web session viewer served by the daemon: the page's files, a WebSocket transport, ``sessiond ui``.

``server`` listens (HTTP + WebSocket through the ``websockets`` library) and hands each
WebSocket to the daemon as a connection; ``transport`` adapts a WebSocket to what a
connection reads and writes; ``static/`` holds the built front-end (sources in
``clients/web``).
"""
