"""Per-family op-spec rows; each module defines SPECS = [OpSpec(...), ...]."""
