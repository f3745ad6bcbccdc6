"""Generic sagas on the sagagraph engine, written only against the public ``sagagraph`` API."""
