"""The embedded registry's Confluent REST API as an ASGI app (the service mounts it at /registry).

`handlers` parse each request (`parsing`), call one `EmbeddedRegistry` method and return what
`answers` renders; `app` routes them and turns every failure into Confluent's error body
``{"error_code": N, "message": "..."}`` with the HTTP status of the code's family, so
Confluent's own clients see the errors they know.
"""

from service.registry.embedded.rest.answers import CONTENT_TYPE
from service.registry.embedded.rest.app import create_registry_app

__all__ = ["CONTENT_TYPE", "create_registry_app"]
