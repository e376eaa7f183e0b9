"""The ``flatavro`` command line."""
