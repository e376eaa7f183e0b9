"""The OpenAPI documentation: the service's document (`service_openapi`), the embedded
registry's (`registry_openapi`, with its examples and schemas), the example error bodies,
what routes declare (`route_docs`), the offline ``/docs`` page, and the committed files
(``python -m service.api.docs.openapi_file``)."""
