"""The Apptainer images: building them (their references are ``core.images``'), their hash-locked package sets, and
the imports each image's %test must cover."""
