"""The HTTP service: FastAPI app factory, settings, routers and the problem+json mapping."""
