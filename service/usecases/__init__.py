"""The use-cases below the HTTP layer and the `Runtime` they run on.

`flatavro serve` (through `service.api`), `flatavro convert` and `flatavro bridge` all open a
`Runtime` (the registry, the schema resolver, the protocol converter); the registry-admin
steps the routers call live here too, with plain dataclasses for results, so nothing in this
package knows FastAPI, HTTP settings, API keys or HTTP metrics.
"""
