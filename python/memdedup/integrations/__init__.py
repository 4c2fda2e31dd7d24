"""memdedup installed into other packages: :mod:`memdedup.integrations.symfonic` rebinds symfonic-core's
dedup and difflib-ratio names to memdedup's exact, faster ones."""
