"""Routers, one per URL prefix (``/v1/<prefix>/...`` in ``<prefix>.py``; ``ops`` serves
``/healthz``, ``/readyz``, ``/metrics``); each handler parses, calls one function and
returns a model."""
