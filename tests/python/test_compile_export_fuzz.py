"""Mutated artifacts (issue 11, untrusted files): 500 byte flips, truncations, appended bytes,
zeroed ranges, edited length fields, and re-checksummed edits of header values and IR tokens,
over a compiled model and a compiled training step, loaded from Python (90 of them also by the C++
runner, examples/cpp/run_artifact). Every case is rejected with ArtifactError, or
loads and computes exactly what the original computes (a raw mutation of bytes never read), or,
for a semantic edit that makes another valid program, runs it. Nothing crashes. The generator is
tests/python/artifact_fuzz.py; scripts/fuzz_artifacts.py runs 20,000 cases (result in
docs/compile.md)."""
import glob
import os

import artifact_fuzz

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

N_CASES = int(os.environ.get("LUCID_ARTIFACT_FUZZ_CASES", "500"))


def test_mutated_artifacts_are_rejected_or_harmless(tmp_path):
    runners = sorted(glob.glob(os.path.join(ROOT, "build", "*", "run_artifact")), key=os.path.getmtime)
    assert runners, "build/<dir>/run_artifact is missing: CMake builds it with the package (scripts/setup.sh)"
    # the C++ loader (run_artifact, no Python) gets the first 90 mutated files too
    tally = artifact_fuzz.run(N_CASES, str(tmp_path), seed=2026, runner=runners[-1], runner_cases=90)
    assert sum(sum(v.values()) for v in tally.values()) == N_CASES
    for kind in artifact_fuzz.RAW:  # raw mutations never yield another program
        assert set(tally[kind]) <= {"rejected", "identical"}, (kind, tally[kind])
    # the checks behind the checksums were reached: most edits are caught there
    for kind in artifact_fuzz.SEMANTIC:
        assert tally[kind].get("rejected", 0) > sum(tally[kind].values()) // 2, (kind, tally[kind])
    assert tally["truncate"] == {"rejected": tally["truncate"]["rejected"]}
