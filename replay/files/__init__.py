"""Our files read and written safely: input files with errors that name them, atomic writes, JSON and YAML."""
