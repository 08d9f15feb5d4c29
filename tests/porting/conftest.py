import os
import sys

# Every op call holds its attributes to the op's declared schema (ops/attr_schema.h): the suite
# proves the schemas complete and exact. Set before lucid is imported (dispatch reads it once).
os.environ.setdefault("LUCID_CHECK_ATTRS", "1")

sys.path.insert(0, os.path.dirname(__file__))
