"""Shared by tests/python and tests/porting: every test session gets its own persistent compile
cache (lucid.compile's disk cache, docs/compile.md), never the user's ~/.cache. The whole suite
then exercises disk hits: a graph two tests trace is optimised once and read back from disk the
second time (the stats a disk hit reports are the stored ones, so no test sees a difference).
Subprocesses the tests start inherit it."""
import atexit
import os
import shutil
import tempfile

_cache_dir = tempfile.mkdtemp(prefix="lucid-test-compile-cache-")
os.environ["LUCID_COMPILE_CACHE_DIR"] = _cache_dir
atexit.register(shutil.rmtree, _cache_dir, ignore_errors=True)
