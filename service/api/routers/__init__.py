"""Routers, one per resource; each handler parses, calls one function and returns."""
