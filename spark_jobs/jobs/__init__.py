"""The two jobs, built from the layers below: the bulk read and the stream (with its
checkpoint marker, start-up checks and metrics)."""
