"""Pure, shared core: table model, flat-avro schemas and values, naming, framing, errors.

Nothing here imports FastAPI, httpx or pyspark, or reads the environment: the service and
the Spark jobs both import it.
"""
