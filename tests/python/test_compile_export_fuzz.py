"""Mutated artifacts (issue 11, untrusted files): 500 byte flips, truncations, appended bytes,
zeroed ranges, edited length fields, and re-checksummed edits of header values and IR tokens,
over a compiled model and a compiled training step. Every case is rejected with ArtifactError, or
loads and computes exactly what the original computes (a raw mutation of bytes never read), or,
for a semantic edit that makes another valid program, runs it. Nothing crashes. The generator is
tests/python/artifact_fuzz.py; scripts/fuzz_artifacts.py runs 20,000 cases (result in
docs/compile.md)."""
import os

import artifact_fuzz

N_CASES = int(os.environ.get("LUCID_ARTIFACT_FUZZ_CASES", "500"))


def test_mutated_artifacts_are_rejected_or_harmless(tmp_path):
    tally = artifact_fuzz.run(N_CASES, str(tmp_path), seed=2026)
    assert sum(sum(v.values()) for v in tally.values()) == N_CASES
    for kind in artifact_fuzz.RAW:  # raw mutations never yield another program
        assert set(tally[kind]) <= {"rejected", "identical"}, (kind, tally[kind])
    # the checks behind the checksums were reached: most edits are caught there
    for kind in artifact_fuzz.SEMANTIC:
        assert tally[kind].get("rejected", 0) > sum(tally[kind].values()) // 2, (kind, tally[kind])
    assert tally["truncate"] == {"rejected": tally["truncate"]["rejected"]}
    assert tally["flip_header"] == {"rejected": tally["flip_header"]["rejected"]}
