"""The ``oph`` scheme (one-permutation hashing, optimal densification):
unbiased over many seeds, variance against theory and against classic
MinHash, band collisions following the S-curve on the shipped sample, and a
brute-force reference of the definition."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calib.sketches import oph
from calib.candidates.lsh import collides, s_curve
from calib.sketches.minhash import estimate_jaccard, signatures, signatures_from_texts
from calib.sketches.schemes import get_scheme
from calib.sketches.represent import Representation
from calib.reading.samples import load_sample
from calib.search.sweep import collision_curve
from calib.search.workspace import Workspace
from test_minhash import FULL, fmix32_py, make_sets, random_corpus

ROOT = Path(__file__).resolve().parents[1]
M32 = 0xFFFFFFFF


def splitmix64_py(x: int) -> int:
    m = (1 << 64) - 1
    z = (x + 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


def oph_row_reference(hashes: list[int], k: int, seed: int) -> list[int]:
    """The module docstring's definition, written out in plain Python."""
    a, b, key = oph.parameters(seed)
    ys = [fmix32_py((a * fmix32_py(h) + b) & M32) for h in hashes]
    bins: dict[int, int] = {}
    for y in ys:
        j = (y * k) >> 32
        bins[j] = min(bins.get(j, M32), y)
    if not bins:
        return [M32] * k
    row = []
    for j in range(k):
        if j in bins:
            row.append(bins[j])
            continue
        src = None
        for t in range(oph.PROBES):
            z = splitmix64_py(key ^ ((j << 32) | t))
            q = ((z >> 32) * k) >> 32
            if q in bins:
                src = q
                break
        if src is None:
            q = (j + 1) % k
            while q not in bins:
                q = (q + 1) % k
            src = q
        row.append(bins[src])
    return row


def _fmix32_inverse(h: int) -> int:
    h ^= h >> 16
    h = (h * pow(0xC2B2AE35, -1, 1 << 32)) & M32
    h ^= (h >> 13) ^ (h >> 26)
    h = (h * pow(0x85EBCA6B, -1, 1 << 32)) & M32
    return h ^ (h >> 16)


def _hash_permuted_to(y: int, seed: int) -> int:
    """The shingle hash h with pi(h) = y under ``seed``'s permutation."""
    a, b, _ = oph.parameters(seed)
    return _fmix32_inverse(((_fmix32_inverse(y) - b) * pow(a, -1, 1 << 32)) & M32)


def test_matches_plain_python_definition():
    rng = np.random.default_rng(4)
    # sizes from empty to many times k: both the densified and the full regime
    docs = [[], [7], [0, FULL, 0]] + [rng.integers(0, 2**32, int(s), dtype=np.uint64).tolist()
                                      for s in (1, 2, 5, 17, 40, 300, 2000)]
    for k in (1, 7, 64, 256):
        for seed in (0, 1, 2**32 - 1):
            # a shingle whose value is EMPTY (0xFFFFFFFF, the last bin's largest): its bin is filled
            top = _hash_permuted_to(M32, seed)
            assert oph_row_reference([top], 1, seed) == [M32]
            docs_k = docs + [[top], [top, 7], [top] + docs[-2]]
            sig = signatures(make_sets(docs_k), k, seed, "oph")
            for d, hs in enumerate(docs_k):
                assert sig[d].tolist() == oph_row_reference(hs, k, seed), (k, seed, d)


def test_registered_with_its_properties():
    s = get_scheme("oph")
    assert s.cost == "O(n + k)" and not s.prefix_stable and not s.datasketch_identical
    texts = [t for t in random_corpus(3, 30) if t.strip()]
    rep = Representation(shingle="char", k=3, scheme="oph", num_perm=64)
    sig = signatures_from_texts(texts, rep)
    assert sig.shape == (len(texts), 64)
    # not prefix-stable: bins depend on the hash count
    assert not np.array_equal(signatures_from_texts(texts, rep.with_(num_perm=32)), sig[:, :32])
    # repeats do not change a row; seeds do; same seed, same bytes
    sets = make_sets([[1, 2, 3, 3, 2, 1], [1, 2, 3]])
    s2 = signatures(sets, 64, 1, "oph")
    assert np.array_equal(s2[0], s2[1])
    assert (signatures_from_texts(texts, rep.with_(seed=2)) == sig).mean() < 0.05
    assert np.array_equal(signatures_from_texts(texts, rep), sig)
    # empty documents: the all-max row, as under every scheme
    assert (signatures_from_texts(["", "   "], rep) == FULL).all()


def pairs_of_size(rng, n_pairs: int, lo: int, hi: int):
    """n_pairs (A, B) of distinct random 32-bit values, |A u B| in [lo, hi), J spread over (0, 1)."""
    docs, exact = [], []
    sizes = rng.integers(lo, hi, n_pairs)
    pool = rng.choice(2**32, size=int(sizes.sum()), replace=False).astype(np.uint64)
    pos = 0
    for t, u in zip(rng.uniform(0.05, 0.95, n_pairs), sizes):
        u = int(u)
        inter = min(max(int(round(t * u)), 1), u - 1)
        a_only = int(rng.integers(0, u - inter + 1))
        elems = pool[pos:pos + u]
        pos += u
        docs.append(np.concatenate([elems[:inter], elems[inter:][:a_only]]))
        docs.append(np.concatenate([elems[:inter], elems[inter:][a_only:]]))
        exact.append(inter / u)
    return make_sets(docs), np.array(exact), sizes


def estimates_over_seeds(sets, scheme: str, k: int, seeds: range) -> np.ndarray:
    i = np.arange(0, sets.n, 2)
    return np.array([estimate_jaccard(signatures(sets, k, s, scheme), i, i + 1) for s in seeds])


def assert_unbiased(est: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """est: (seeds, pairs). No pair's mean estimate is off (|z| < 4), nor all
    of them a little (mean z within 3 of its standard error); returns the
    per-pair variance over seeds."""
    var = est.var(0, ddof=1)
    z = (est.mean(0) - exact) / np.sqrt(var / len(est))
    assert np.abs(z).max() < 4.0, z
    assert abs(z.mean()) < 3.0 / np.sqrt(len(z)), z
    return var


@pytest.mark.slow
def test_unbiased_over_many_seeds_and_variance_of_sampling_without_replacement():
    # |A u B| >> k: no empty bin, so OPH samples k bins without replacement and
    # Var = J(1-J)/k * (1 - (k-1)/(|A u B|-1)) (Li, Owen & Zhang 2012), a bit
    # below classic MinHash's J(1-J)/k.
    k, n_seeds = 128, 1500
    rng = np.random.default_rng(17)
    sets, exact, union = pairs_of_size(rng, 16, 1000, 3000)
    var = assert_unbiased(estimates_over_seeds(sets, "oph", k, range(n_seeds)), exact)
    theory = exact * (1 - exact) / k * (1 - (k - 1) / (union - 1))
    ratio = var / theory
    # a sample variance of 1500 draws is within ~ +-4 * sqrt(2/1500) = 15 % of the truth
    assert (np.abs(ratio - 1) < 0.15).all(), ratio
    assert 0.95 < ratio.mean() < 1.05, ratio.mean()


@pytest.mark.slow
def test_sparse_documents_unbiased_and_variance_close_to_classic():
    # |A u B| in [8, 60) with k = 128: most bins are empty and densified.
    k, n_seeds = 128, 1500
    rng = np.random.default_rng(23)
    sets, exact, _ = pairs_of_size(rng, 16, 8, 60)
    var = assert_unbiased(estimates_over_seeds(sets, "oph", k, range(n_seeds)), exact)
    classic = estimates_over_seeds(sets, "prefix", k, range(n_seeds)).var(0, ddof=1)
    ratio = var / classic
    # densified bins copy their neighbours, so the variance is larger than
    # classic MinHash's, but optimal densification keeps it within 2x here
    # (Shrivastava 2017); a constant fill (no densification) would not be unbiased at all
    assert 1.0 < np.median(ratio) < 2.0, ratio
    assert ratio.max() < 3.0, ratio


def test_unbiasedness_check_rejects_a_biased_variant():
    # guard for the tests above: OPH without densification, where two empty
    # bins count as agreement, is biased upwards, and the statistic sees it.
    k, n_seeds = 128, 200
    rng = np.random.default_rng(29)
    sets, exact, _ = pairs_of_size(rng, 16, 8, 60)
    i = np.arange(0, sets.n, 2)
    biased = []
    for s in range(n_seeds):
        a, b, _ = oph.parameters(s)
        rows = []
        for d in range(sets.n):
            bins = {}
            for h in sets.of(d).tolist():
                y = fmix32_py((a * fmix32_py(h) + b) & M32)
                bins[(y * k) >> 32] = min(bins.get((y * k) >> 32, M32), y)
            rows.append([bins.get(j, M32) for j in range(k)])  # no densification
        sig = np.array(rows, dtype=np.uint32)
        biased.append(estimate_jaccard(sig, i, i + 1))
    est = np.array(biased)
    with pytest.raises(AssertionError):
        assert_unbiased(est, exact)
    z = (est.mean(0) - exact) / np.sqrt(est.var(0, ddof=1) / n_seeds)
    assert z.min() > 4.0  # every pair far above its Jaccard


@pytest.mark.slow
@pytest.mark.parametrize("shingle,k", [("char", 5), ("word", 3)])
def test_collision_curve_follows_the_s_curve_on_the_shipped_sample(shingle, k):
    # The Curves page's collision_curve, run for oph at 40 seeds on the same
    # pairs: per exact-J bin the mean collision rate is within error of the
    # S-curve P(s) = 1 - (1 - s^r)^b. Pairs of one seed share documents and
    # hash functions, so they are not independent draws: the error is taken
    # from the spread between seeds (independent replicates), a t statistic.
    # (word3 documents have ~150 shingles for 128 bins: many densified bins.)
    ws = Workspace(load_sample(ROOT / "data" / "sample"))
    base = Representation(shingle=shingle, k=k, num_perm=128, scheme="oph")
    b, r, n_seeds = 16, 8, 40
    curves = [collision_curve(ws, base.with_(seed=s), b, r, floor=0.3, bins=40, seed=0) for s in range(n_seeds)]
    first = curves[0]
    for c in curves[1:]:  # the same pairs in the same bins for every signature seed
        assert c["pairs"].tolist() == first["pairs"].tolist()
    rates = np.array([c["rate"].to_numpy() for c in curves])
    theory = first["theory"].to_numpy()  # at each bin's mean J (bins of 0.025: Jensen gap < 1e-3)
    keep = (theory > 0.02) & (theory < 0.98) & (first["pairs"].to_numpy() >= 20)
    assert keep.sum() >= 6, first
    t = (rates.mean(0) - theory)[keep] / (rates.std(0, ddof=1)[keep] / np.sqrt(n_seeds))
    assert np.abs(t).max() < 4.0, (first[keep], t)


def test_s_curve_collisions_on_planted_pairs():
    # planted pairs at a few J, 200 seeds: the band-collision rate of each
    # pair is within binomial error of 1 - (1 - J^r)^b
    rng = np.random.default_rng(31)
    sets, exact, _ = pairs_of_size(rng, 8, 1500, 2500)
    b, r, n_seeds = 16, 8, 200
    i = np.arange(0, sets.n, 2)
    hits = np.array([collides(signatures(sets, b * r, s, "oph"), i, i + 1, b, r) for s in range(n_seeds)])
    p = s_curve(exact, b, r)
    z = (hits.sum(0) - n_seeds * p) / np.sqrt(n_seeds * p * (1 - p) + 1e-12)
    assert np.abs(z[(p > 0.01) & (p < 0.99)]).max() < 4.0, (exact, z)


def test_sweep_keeps_one_oph_matrix_per_hash_count():
    # oph is not prefix-stable: a sweep over two hash counts computes two
    # matrices (the prefix scheme shares one), and every row is scored
    import pandas as pd

    from calib.reading.sample import from_frames
    from calib.search.grid import Grid
    from calib.search.sweep import sweep

    texts = [t for t in random_corpus(12, 40) if t.strip()]
    docs = pd.DataFrame({"id": [f"d{i}" for i in range(len(texts))], "text": texts})
    pairs = pd.DataFrame({"id_a": ["d5", "d6"], "id_b": [f"d{5 + len(texts) // 2 - 2}", "d7"],
                          "label": ["duplicate", "not_duplicate"]})
    for scheme, matrices in (("oph", 2), ("prefix", 1)):
        ws = Workspace(from_frames(docs, pairs))
        res = sweep(ws, Grid(representations=(Representation(k=2, scheme=scheme),), num_perms=(32, 64),
                             splits=((8, 4),), thresholds=(0.5,)))
        assert len(res) == 2 and (res["status"] == "ok").all() and set(res["scheme"]) == {scheme}
        assert ws.cache_info()["signature_matrices"] == matrices


def test_every_target_says_it_cannot_reproduce_oph():
    from calib.search.config import Config
    from calib.production.targets import targets

    for name, t in targets(Config(Representation(scheme="oph"))).items():
        fields = {u["field"] for u in t.unsupported}
        # each target lists the scheme, or the whole representation (Milvus computes its own signatures)
        assert fields & {"/representation/scheme", "/representation", "/representation/hashfunc"}, name
    assert "/representation/scheme" in {u["field"] for u in targets(Config(Representation(scheme="oph")))[
        "datasketch"].unsupported}
    assert "/representation/scheme" not in {u["field"] for u in targets(Config())["datasketch"].unsupported}


def test_text_path_permutes_in_the_hashing_loop_to_the_same_signatures():
    """signatures_from_texts computes oph's pi(h) inside the shingle hashing loop (every hashing
    path: ASCII k < 16 and k >= 16, words, non-ASCII, mmh3; sha1 keeps the two steps): the same
    signatures as oph over the shingle hashes."""
    from calib.sketches.shingles import shingle_hashes
    texts = ["", "a", "abcd", "The quick brown fox, again: the quick brown fox!", "Ünïcödé ﬁ ΣΑΣ text\twith  spaces",
             "x" * 40, "word " * 30]
    for rep in (Representation(scheme="oph"), Representation(shingle="char", k=5, scheme="oph", num_perm=256),
                Representation(shingle="char", k=17, scheme="oph", seed=7, strip_punct=True),
                Representation(shingle="char", k=3, scheme="oph", hashfunc="mmh3", num_perm=16),
                Representation(shingle="char", k=5, scheme="oph", hashfunc="sha1", num_perm=16)):
        sets = shingle_hashes(texts, rep, unique=False)
        assert np.array_equal(signatures_from_texts(texts, rep, batch_size=3),
                              oph.signatures(sets.offsets, sets.hashes, rep.num_perm, rep.seed)), rep


def test_signatures_written_into_rows_of_a_larger_matrix():
    """``out=``: the rows of a slice are written in place, the rest untouched; a wrong shape is refused."""
    rng = np.random.default_rng(3)
    offsets = np.array([0, 5, 5, 300, 301], dtype=np.int64)
    values = rng.integers(0, 2**32, size=301, dtype=np.uint64).astype(np.uint32)
    want = oph.signatures_permuted(offsets, values, 64, 9)
    big = np.full((7, 64), 7, dtype=np.uint32)
    got = oph.signatures_permuted(offsets, values, 64, 9, out=big[2:6])
    assert np.array_equal(got, want) and np.array_equal(big[2:6], want)
    assert (big[:2] == 7).all() and (big[6:] == 7).all()
    with pytest.raises(ValueError, match="shape"):
        oph.signatures_permuted(offsets, values, 64, 9, out=big[2:5])
