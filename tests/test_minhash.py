"""MinHash signatures: bit-identical to datasketch for the 'datasketch' scheme,
prefix-stable and unbiased for the 'prefix' scheme."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import mmh3
import numpy as np
import pytest
import xxhash
from datasketch import MinHash
from hypothesis import given, settings
from hypothesis import strategies as st

from calib.sketches.minhash import estimate_jaccard, permutations, signatures, signatures_from_texts
from calib.sketches.schemes import canonical_scheme, get_scheme, register, scheme_names
from calib.sketches.represent import Representation, shingle_strings
from calib.sketches.shingles import ShingleSets, shingle_hashes
from _util import one_thread

R = Representation
ROOT = Path(__file__).resolve().parents[1]
FULL = 0xFFFFFFFF

# hashfunc passed to datasketch.MinHash; None = datasketch's default (sha1_hash32)
DS_HASHFUNC = {
    "xxhash": xxhash.xxh32_intdigest,
    "mmh3": lambda b: mmh3.hash(b, 0, signed=False),
    "sha1": None,
}




def datasketch_minhash(text: str, rep: Representation) -> MinHash:
    kw = {} if DS_HASHFUNC[rep.hashfunc] is None else {"hashfunc": DS_HASHFUNC[rep.hashfunc]}
    m = MinHash(num_perm=rep.num_perm, seed=rep.seed, **kw)
    m.update_batch([s.encode("utf-8") for s in shingle_strings(text, rep)])
    return m


def make_sets(list_of_lists) -> ShingleSets:
    sizes = [len(x) for x in list_of_lists]
    off = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=off[1:])
    h = np.concatenate([np.asarray(x, dtype=np.uint32) for x in list_of_lists]) if sizes else np.zeros(0, np.uint32)
    return ShingleSets(offsets=off, hashes=h.astype(np.uint32), unique=False)


def random_corpus(seed: int, n: int = 24) -> list[str]:
    rng = np.random.default_rng(seed)
    vocab = ["alpha", "beta", "gamma", "delta", "épsilon", "ζeta", "漢字", "😀", "x", "y", "z", "w", "q"]
    texts = ["", "   \t\n", "single", "two words", "Two  WORDS"]
    base = [" ".join(rng.choice(vocab, int(rng.integers(3, 40)))) for _ in range(n // 2)]
    texts += base
    for t in base[: n // 2 - 5]:
        w = t.split()
        w[int(rng.integers(0, len(w)))] = "mutated"
        texts.append(" ".join(w))
    return texts


# ------------------------------------------------------- datasketch identity

@pytest.mark.parametrize("hashfunc", ["xxhash", "mmh3", "sha1"])
@pytest.mark.parametrize("num_perm", [1, 7, 64, 128, 256])
def test_datasketch_scheme_bit_identical(num_perm, hashfunc):
    texts = random_corpus(num_perm)
    for seed in (0, 1, 42, 2**32 - 1):
        rep = R(k=2, hashfunc=hashfunc, num_perm=num_perm, seed=seed, scheme="datasketch")
        sig = signatures_from_texts(texts, rep)
        sig_sets = signatures(shingle_hashes(texts, rep, unique=True), num_perm, seed, "datasketch")
        assert sig.shape == (len(texts), num_perm) and sig.dtype == np.uint32
        for d, t in enumerate(texts):
            ref = datasketch_minhash(t, rep).hashvalues
            assert np.array_equal(sig[d].astype(np.uint64), ref), (seed, d, t)
            assert np.array_equal(sig_sets[d].astype(np.uint64), ref)
        # empty and whitespace-only documents: datasketch's empty MinHash, all 0xFFFFFFFF
        assert (sig[:2] == FULL).all()
        # a one-shingle document is not all-max
        assert not (sig[2] == FULL).all()


def test_datasketch_permutations_identical():
    for num_perm in (1, 7, 128, 256):
        for seed in (0, 1, 123456789):
            a, b = permutations(num_perm, seed, "datasketch")
            pa, pb = MinHash(num_perm=num_perm, seed=seed).permutations
            assert np.array_equal(a.astype(np.uint64), pa) and np.array_equal(b.astype(np.uint64), pb)
            assert (a % 2 == 1).all()


def test_datasketch_scheme_is_not_a_prefix():
    # documented: all a's are drawn before the b's, so 128 is not a prefix of 256
    a128, b128 = permutations(128, 1, "datasketch")
    a256, b256 = permutations(256, 1, "datasketch")
    assert np.array_equal(a128, a256[:128])
    assert not np.array_equal(b128, b256[:128])


words = st.sampled_from(["a", "b", "c", "d", "ü", "漢", "😀", "x\x00y", "e\u0301"])


@given(st.lists(st.lists(words, max_size=12).map(" ".join), min_size=1, max_size=5),
       st.sampled_from([1, 3, 16]), st.integers(0, 2**32 - 1), st.integers(1, 4),
       st.sampled_from(["word", "char"]), st.sampled_from(["xxhash", "mmh3", "sha1"]))
@settings(max_examples=80, deadline=None)
def test_datasketch_identity_property(texts, num_perm, seed, k, shingle, hashfunc):
    rep = R(k=k, shingle=shingle, hashfunc=hashfunc, num_perm=num_perm, seed=seed, scheme="datasketch")
    with one_thread():
        sig = signatures_from_texts(texts, rep)
    for d, t in enumerate(texts):
        assert np.array_equal(sig[d].astype(np.uint64), datasketch_minhash(t, rep).hashvalues)


# --------------------------------------------------- independent affine32 check

def fmix32_py(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & FULL
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & FULL
    h ^= h >> 16
    return h


@pytest.mark.parametrize("scheme", ["prefix", "datasketch"])
def test_signature_is_min_of_affine32_of_fmix(scheme):
    rng = np.random.default_rng(11)
    docs = [rng.integers(0, 2**32, int(rng.integers(0, 30)), dtype=np.uint64).tolist() for _ in range(30)]
    docs[0] = []
    docs[1] = [0, FULL, 0]
    a, b = permutations(16, 5, scheme)
    sig = signatures(make_sets(docs), 16, 5, scheme)
    for d, hs in enumerate(docs):
        for p in range(16):
            ref = min(((int(a[p]) * fmix32_py(h) + int(b[p])) & FULL for h in hs), default=FULL)
            assert int(sig[d, p]) == ref


# ------------------------------------------------------------- prefix scheme

def test_prefix_permutations_properties():
    a, b = permutations(256, 1, "prefix")
    assert a.dtype == np.uint32 and b.dtype == np.uint32
    assert (a % 2 == 1).all()
    assert len(set(a.tolist())) == 256 and len(set(b.tolist())) == 256
    a64, b64 = permutations(64, 1, "prefix")
    assert np.array_equal(a64, a[:64]) and np.array_equal(b64, b[:64])
    # roughly uniform over [0, 2^32)
    assert abs(b.astype(np.float64).mean() / 2**32 - 0.5) < 0.1
    a2, b2 = permutations(256, 2, "prefix")
    assert not np.array_equal(a, a2) and not np.array_equal(b, b2)
    with pytest.raises(ValueError, match="scheme"):
        permutations(8, 1, "bogus")


def test_old_name_fast_is_prefix():
    # 'fast' was the prefix scheme's first name: configs and results that
    # spell it still load, and mean exactly the prefix scheme
    assert np.array_equal(np.stack(permutations(64, 3, "fast")), np.stack(permutations(64, 3, "prefix")))
    rep = R(scheme="fast")
    assert rep.scheme == "prefix" and rep == R() and rep.fingerprint() == R().fingerprint()
    sets = make_sets([[1, 2, 3], [4, 5]])
    assert np.array_equal(signatures(sets, 16, 2, "fast"), signatures(sets, 16, 2, "prefix"))
    assert canonical_scheme("fast") == "prefix" and "fast" not in scheme_names()


def test_registry():
    assert scheme_names() == ("prefix", "datasketch", "oph", "icws", "dart")
    assert get_scheme("icws").weighted and get_scheme("dart").weighted and not any(get_scheme(n).weighted for n in ("prefix", "datasketch", "oph"))
    assert get_scheme("prefix").prefix_stable and get_scheme("datasketch").datasketch_identical
    for bad in ("bogus", "", None, "Prefix"):
        with pytest.raises(ValueError, match="scheme"):
            canonical_scheme(bad)
    with pytest.raises(ValueError, match="already registered"):
        register(get_scheme("oph"))
    with pytest.raises(ValueError, match="affine32"):
        permutations(8, 1, "oph")


def test_prefix_prefix_property():
    texts = random_corpus(5, 60)
    for seed in (0, 1, 99):
        for hashfunc in ("xxhash", "mmh3"):
            rep = R(k=3, hashfunc=hashfunc, seed=seed)
            s256 = signatures_from_texts(texts, rep.with_(num_perm=256))
            for m in (1, 7, 64, 128):
                assert np.array_equal(signatures_from_texts(texts, rep.with_(num_perm=m)), s256[:, :m])


def test_seeds_give_different_signatures():
    texts = [t for t in random_corpus(8, 40) if t.strip()]
    for scheme in scheme_names():
        s1 = signatures_from_texts(texts, R(k=2, seed=1, scheme=scheme))
        s2 = signatures_from_texts(texts, R(k=2, seed=2, scheme=scheme))
        assert (s1 == s2).mean() < 0.05
        assert np.array_equal(s1, signatures_from_texts(texts, R(k=2, seed=1, scheme=scheme)))  # deterministic


def test_prefix_and_datasketch_schemes_differ():
    texts = [t for t in random_corpus(9, 20) if t.strip()]
    sf = signatures_from_texts(texts, R(k=2))
    sd = signatures_from_texts(texts, R(k=2, scheme="datasketch"))
    assert (sf == sd).mean() < 0.05


def test_empty_documents_all_max_every_scheme():
    for scheme in scheme_names():
        sig = signatures_from_texts(["", "  ", "!"], R(strip_punct=True, scheme=scheme, num_perm=32))
        assert (sig == FULL).all()
        assert estimate_jaccard(sig, [0], [1]).tolist() == [1.0]  # documented: empties must be masked


# ------------------------------------------------------------- unbiasedness

def planted_pairs(rng, n_pairs: int, sequential: bool):
    """n_pairs (A, B) with exact Jaccard I/U spread over (0, 1)."""
    docs, exact = [], []
    targets = rng.uniform(0.03, 0.97, n_pairs)
    sizes = rng.integers(40, 200, n_pairs)
    total = int(sizes.sum())
    pool = (np.arange(total, dtype=np.uint64) if sequential
            else rng.choice(2**32, size=total, replace=False).astype(np.uint64))
    pos = 0
    for t, u in zip(targets, sizes):
        u = int(u)
        inter = min(max(int(round(t * u)), 1), u - 1)
        a_only = int(rng.integers(0, u - inter + 1))
        elems = pool[pos:pos + u]
        pos += u
        common, rest = elems[:inter], elems[inter:]
        docs.append(np.concatenate([common, rest[:a_only]]))
        docs.append(np.concatenate([common, rest[a_only:]]))
        exact.append(inter / u)
    return make_sets(docs), np.array(exact)


@pytest.mark.parametrize("scheme,sequential,seed", [
    ("prefix", False, 1), ("prefix", True, 7), ("datasketch", False, 1), ("datasketch", True, 3),
    ("oph", False, 1), ("oph", True, 5),
])
def test_unbiased_with_binomial_variance(scheme, sequential, seed):
    num_perm, n_pairs = 128, 400
    rng = np.random.default_rng(1000 + seed)
    sets, exact = planted_pairs(rng, n_pairs, sequential)
    sig = signatures(sets, num_perm, seed, scheme)
    i = np.arange(0, 2 * n_pairs, 2)
    est = estimate_jaccard(sig, i, i + 1)
    err = est - exact
    se = err.std(ddof=1) / np.sqrt(n_pairs)
    assert abs(err.mean()) < 3 * se, (err.mean(), se)
    z2 = err**2 / (exact * (1 - exact) / num_perm)
    assert 0.7 < z2.mean() < 1.3, z2.mean()


def test_unbiasedness_check_detects_a_biased_estimator():
    # guard: the statistic above does reject a wrong estimator (here: fewer columns
    # than claimed, which inflates the variance, and a constant bias)
    rng = np.random.default_rng(5)
    sets, exact = planted_pairs(rng, 400, False)
    sig = signatures(sets, 128, 1, "prefix")
    i = np.arange(0, 800, 2)
    est32 = estimate_jaccard(sig, i, i + 1, num_perm=32)
    z2 = (est32 - exact) ** 2 / (exact * (1 - exact) / 128)
    assert z2.mean() > 2.0
    err = estimate_jaccard(sig, i, i + 1) + 0.02 - exact
    assert abs(err.mean()) > 3 * err.std(ddof=1) / np.sqrt(400)


# -------------------------------------------------------------- estimate

def test_estimate_jaccard_is_fraction_of_equal_columns():
    rng = np.random.default_rng(2)
    sig = rng.integers(0, 3, (20, 50)).astype(np.uint32)
    i, j = np.triu_indices(20, 1)
    assert np.allclose(estimate_jaccard(sig, i, j), (sig[i] == sig[j]).mean(axis=1))
    assert np.allclose(estimate_jaccard(sig, i, j, num_perm=10), (sig[i, :10] == sig[j, :10]).mean(axis=1))
    hand = np.array([[1, 2, 3, 4], [1, 2, 0, 0]], dtype=np.uint32)
    assert estimate_jaccard(hand, [0], [1]).tolist() == [0.5]
    assert estimate_jaccard(hand, [0], [1], num_perm=2).tolist() == [1.0]
    assert estimate_jaccard(hand, [0], [0]).tolist() == [1.0]
    for bad in (0, 5):
        with pytest.raises(ValueError):
            estimate_jaccard(hand, [0], [1], num_perm=bad)


# ------------------------------------------------------ batching / plumbing

def test_signatures_from_texts_equals_two_steps_and_batch_invariant():
    texts = random_corpus(21, 50)
    for rep in (R(k=2), R(shingle="char", k=4, hashfunc="mmh3", scheme="datasketch", num_perm=64, seed=9)):
        sets = shingle_hashes(texts, rep, unique=False)
        ref = signatures(sets, rep.num_perm, rep.seed, rep.scheme)
        assert np.array_equal(signatures(shingle_hashes(texts, rep, unique=True), rep.num_perm, rep.seed,
                                         rep.scheme), ref)
        for bs in (1, 3, 7, 49, 50, 10_000):
            assert np.array_equal(signatures_from_texts(texts, rep, batch_size=bs), ref), bs
            assert np.array_equal(signatures(sets, rep.num_perm, rep.seed, rep.scheme, batch_size=bs), ref), bs


def test_signatures_of_nothing_and_bad_num_perm():
    assert signatures_from_texts([], R()).shape == (0, 128)
    assert signatures(make_sets([]), 8).shape == (0, 8)
    with pytest.raises(ValueError, match="num_perm"):
        signatures(make_sets([[1, 2]]), 0)


def test_estimate_jaccard_rejects_bad_pairs():
    # in a subprocess: an out-of-bounds read can segfault the interpreter
    code = textwrap.dedent("""
        import numpy as np
        from calib.sketches.minhash import estimate_jaccard
        sig = np.arange(24, dtype=np.uint32).reshape(6, 4)
        for i, j in (([0], [6]), ([-1], [5]), ([0, 1], [0])):
            try:
                estimate_jaccard(sig, i, j)
            except ValueError:
                print("raised", flush=True)
            else:
                print("accepted", flush=True)
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and proc.stdout.split() == ["raised"] * 3
