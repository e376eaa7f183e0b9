"""The HTTP service, by layer: the plumbing at this level (app factory, settings,
dependencies and API keys, middleware, the body gate, problem+json, metrics, logs),
`routers/` (one per URL prefix), `models/` (pydantic, converting to and from the use-cases'
types at the edge) and `docs/` (the OpenAPI documents and the docs page). The use-cases and
the `Runtime` they run on live below, in `service.usecases`."""
