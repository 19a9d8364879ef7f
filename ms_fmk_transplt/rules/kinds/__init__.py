"""One module per rule kind; each registers itself with `registry.kind`."""
