"""Real parts for the Spark tests: the session fixture `spark` (one local[2] session with the
Maven-cache jars) and the broker fixture `kafka` are in tests/conftest.py. A missing part fails
loudly; nothing is skipped."""
