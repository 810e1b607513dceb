"""Reading runs for the pure core: the bake-off, flips, drift, adjudication and verification."""
