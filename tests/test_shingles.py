"""Compiled shingle hashing against the pure-Python reference shingler and the
reference hash libraries (xxhash, mmh3, datasketch's sha1_hash32)."""

from __future__ import annotations


import mmh3
import numpy as np
import pytest
import xxhash
from datasketch.hashfunc import sha1_hash32
from hypothesis import given, settings
from hypothesis import strategies as st

from calib.sketches.hashing import murmur3_32, xxh32, xxh32_fixed, xxh32_fixed_any, xxh32_words
from calib.sketches.represent import Representation, shingle_strings
from calib.sketches.shingles import ShingleSets, chunk_sets, hash_bytes, shingle_hashes
from _util import one_thread

R = Representation

REF = {
    "xxhash": lambda b: xxhash.xxh32_intdigest(b),
    "mmh3": lambda b: mmh3.hash(b, 0, signed=False),
    "sha1": sha1_hash32,
}




def ref_hashes(text: str, rep: Representation) -> list[int]:
    return [REF[rep.hashfunc](s.encode("utf-8")) for s in shingle_strings(text, rep)]


# ------------------------------------------------------------ hash primitives

@pytest.mark.parametrize("fn,ref", [(xxh32, REF["xxhash"]), (murmur3_32, REF["mmh3"])])
def test_compiled_hash_matches_library_all_lengths(fn, ref):
    rng = np.random.default_rng(20240601)
    for n in range(0, 71):
        for _ in range(4):
            pad_l, pad_r = int(rng.integers(0, 9)), int(rng.integers(0, 9))
            buf = rng.integers(0, 256, pad_l + n + pad_r, dtype=np.uint8)
            data = buf[pad_l:pad_l + n].tobytes()
            # hash a slice in the middle of a larger buffer: padding must not leak in
            assert int(fn(buf, pad_l, pad_l + n)) == ref(data), (n, data)
            if fn is xxh32 and n < 16:  # the short-input variant the ASCII char-shingle path inlines
                assert int(xxh32_fixed(buf, pad_l, n)) == ref(data), (n, data)
            if fn is xxh32 and n < 32:  # and its one-stripe extension (character 24-grams)
                assert int(xxh32_fixed_any(buf, pad_l, n)) == ref(data), (n, data)


@pytest.mark.parametrize("k", [*range(1, 21), 24])
def test_ascii_char_kgrams_every_k_equal_xxhash(k):
    # the ASCII char path compiles k = 3..8 as literals, other k < 16 with a
    # variable k, k >= 16 with the striped hash: every branch against xxhash
    rng = np.random.default_rng(k)
    texts = ["".join(rng.choice(list("abcdef xyz.,"), size=int(n))) for n in rng.integers(0, 60, 40)]
    texts += ["a" * (k - 1), "b" * k, "c" * (k + 1)]
    rep = R(shingle="char", k=k, lowercase=False, nfkc=False)
    ss = shingle_hashes(texts, rep, unique=False)
    for d, text in enumerate(texts):
        assert ss.of(d).tolist() == ref_hashes(text, rep), (k, text)


def test_xxh32_words_equals_xxhash_for_every_short_length():
    rng = np.random.default_rng(7)
    for n in range(16):
        for _ in range(20):
            data = rng.integers(0, 256, 16, dtype=np.uint8)  # bytes past n must not matter
            w = data.view("<u4")
            assert int(xxh32_words(w[0], w[1], w[2], w[3], np.uint32(n))) == REF["xxhash"](data[:n].tobytes())


def _mixed_text(rng, n_chars: int, share: float) -> str:
    """n_chars code points, about ``share`` of them outside ASCII: 2-, 3- and 4-byte ones."""
    wide = list("éßжщΣ漢字かな") + ["\U0001F600", "\U0001F44D"]
    return "".join(str(rng.choice(wide)) if rng.random() < share else str(rng.choice(list("abcde xyz")))
                   for _ in range(n_chars))


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 7, 8])
def test_char_kgrams_by_runs_and_by_blocks_equal_xxhash(k):
    # Texts not ASCII are hashed by ASCII runs when their bytes >= 0x80 are sparse, else by blocks
    # of 256 k-grams: both sides of that switch, texts longer than a block (k-grams across block
    # edges), shorter than k, k-grams of 16 bytes and more (emoji, k >= 4), ends within 16 bytes;
    # plain hashes and the oph scheme's pi(h), each against xxhash itself.
    from calib.sketches import oph
    rng = np.random.default_rng(100 + k)
    texts = [_mixed_text(rng, int(n), share) for share in (0.01, 0.04, 0.2, 0.6, 1.0)
             for n in (1, k - 1, k, k + 3, 40, 255 + k, 256 + k, 257 + k, 700)]
    texts += ["\U0001F600" * 9, "é" * 600, "a" * 300 + "ж" * 300, "ж" * 300 + "a" * 300]
    rep = R(shingle="char", k=k, lowercase=False, nfkc=False)
    a, b, _ = oph.parameters(3)
    plain = chunk_sets(texts, rep, unique=False)
    permuted = chunk_sets(texts, rep, unique=False, permuted=(a, b))
    for d, text in enumerate(texts):
        ref = ref_hashes(text, rep)
        assert plain.of(d).tolist() == ref, (k, text)
        assert permuted.of(d).tolist() == [int(oph.permute(np.uint32(h), a, b)) for h in ref], (k, text)


@pytest.mark.parametrize("fn,ref", [(xxh32, REF["xxhash"]), (murmur3_32, REF["mmh3"])])
def test_compiled_hash_known_vectors(fn, ref):
    # published test vectors: xxh32("") = 0x02CC5D05, murmur3_32("", 0) = 0
    empty = np.zeros(0, dtype=np.uint8)
    assert int(xxh32(empty, 0, 0)) == 0x02CC5D05
    assert int(murmur3_32(empty, 0, 0)) == 0
    for s in [b"a", b"abc", b"hello world", b"\xff" * 33, bytes(range(70))]:
        buf = np.frombuffer(s, dtype=np.uint8)
        assert int(fn(buf, 0, len(s))) == ref(s)


@given(st.binary(max_size=70), st.binary(max_size=5))
@settings(max_examples=300, deadline=None)
def test_compiled_hashes_property(data, pad):
    buf = np.frombuffer(pad + data + pad, dtype=np.uint8)
    s, e = len(pad), len(pad) + len(data)
    assert int(xxh32(buf, s, e)) == xxhash.xxh32_intdigest(data)
    assert int(murmur3_32(buf, s, e)) == mmh3.hash(data, 0, signed=False)


def test_hash_bytes_is_the_reference_library():
    for b in [b"", b"x", "héllo wörld".encode(), "😀".encode() * 5]:
        assert hash_bytes(b, "xxhash") == xxhash.xxh32_intdigest(b)
        assert hash_bytes(b, "mmh3") == mmh3.hash(b, 0, signed=False)
        import hashlib
        import struct
        assert hash_bytes(b, "sha1") == struct.unpack("<I", hashlib.sha1(b).digest()[:4])[0]
    with pytest.raises(ValueError):
        hash_bytes(b"x", "md5")


# ------------------------------------------------------------ shingle_hashes

ALPHABET = st.one_of(
    st.characters(codec="utf-8"),
    st.sampled_from(list("abc xyz  \t\n\r\x00\x0b\x1c\u00a0\u2003\u3000.,!?-_'\"«»")
                    + ["😀", "👍🏽", "👨\u200d👩\u200d👧", "\u0301", "\u0308", "e\u0301", "ﬁ", "Ａ", "ß", "İ", "Σ",
                       "漢字", "かな", "مرحبا", "שָׁלוֹם", "हिंदी", "\u200f", "\u202e", "\ufeff"]),
)
TEXT = st.lists(ALPHABET, max_size=30).map("".join)
TEXTS = st.lists(st.one_of(TEXT, st.sampled_from(["", " ", " \t\n ", "\x00", "a", "a b c d e f g"])),
                 min_size=0, max_size=6)
REPS = st.builds(R, shingle=st.sampled_from(["word", "char"]), k=st.integers(1, 6),
                 hashfunc=st.sampled_from(["xxhash", "mmh3", "sha1"]), lowercase=st.booleans(),
                 nfkc=st.booleans(), strip_punct=st.booleans(), collapse_ws=st.booleans())


def check_layout(ss: ShingleSets, n: int):
    assert isinstance(ss, ShingleSets)
    assert ss.n == n
    assert ss.offsets.dtype == np.int64 and ss.hashes.dtype == np.uint32
    assert ss.offsets[0] == 0 and ss.offsets[-1] == len(ss.hashes)
    assert np.all(np.diff(ss.offsets) >= 0)


@given(TEXTS, REPS)
@settings(max_examples=300, deadline=None)
def test_shingle_hashes_equal_reference_with_repeats(texts, rep):
    with one_thread():
        ss = shingle_hashes(texts, rep, unique=False)
    check_layout(ss, len(texts))
    assert ss.unique is False
    for d, text in enumerate(texts):
        assert ss.of(d).tolist() == ref_hashes(text, rep), (text, rep)
    assert ss.sizes().tolist() == [len(shingle_strings(t, rep)) for t in texts]


@given(TEXTS, REPS)
@settings(max_examples=200, deadline=None)
def test_shingle_hashes_unique_equal_sorted_set(texts, rep):
    with one_thread():
        ss = shingle_hashes(texts, rep, unique=True)
    check_layout(ss, len(texts))
    assert ss.unique is True
    for d, text in enumerate(texts):
        assert ss.of(d).tolist() == sorted(set(ref_hashes(text, rep)))


@pytest.mark.parametrize("hashfunc", ["xxhash", "mmh3", "sha1"])
@pytest.mark.parametrize("shingle", ["word", "char"])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6])
def test_every_hashfunc_shingle_k_on_fixed_corpus(hashfunc, shingle, k):
    texts = ["", "   ", "one", "The quick brown fox jumps over the lazy dog, the quick brown fox!",
             "emoji 😀 and 👨\u200d👩\u200d👧 family", "combining e\u0301 and a\u0308 marks",
             "漢字かなカナ 混じり文", "עברית مرحبا بالعالم RTL", "tabs\tand\nnewlines\r\nhere",
             "nul\x00char", "ﬁ ＡＢＣ İstanbul straße", "a a a a a a a a"]
    rep = R(shingle=shingle, k=k, hashfunc=hashfunc)
    ss = shingle_hashes(texts, rep, unique=False)
    su = shingle_hashes(texts, rep, unique=True)
    for d, t in enumerate(texts):
        ref = ref_hashes(t, rep)
        assert ss.of(d).tolist() == ref
        assert su.of(d).tolist() == sorted(set(ref))
    # hand check: empty and whitespace-only docs have no shingles
    assert ss.sizes()[:2].tolist() == [0, 0]
    if shingle == "word" or k >= 3:  # "one" is a single shingle
        assert ss.of(2).tolist() == [REF[hashfunc](b"one")]
    else:
        assert ss.of(2).tolist() == [REF[hashfunc](s.encode()) for s in (["o", "n", "e"] if k == 1 else ["on", "ne"])]


def test_hand_example_word_shingles():
    rep = R(k=2, hashfunc="xxhash")
    ss = shingle_hashes(["A b  C", "b c"], rep, unique=False)
    h = xxhash.xxh32_intdigest
    assert ss.of(0).tolist() == [h(b"a b"), h(b"b c")]
    assert ss.of(1).tolist() == [h(b"b c")]
    assert ss.offsets.tolist() == [0, 2, 3]


def test_hand_example_char_shingles_multibyte():
    rep = R(shingle="char", k=2, hashfunc="mmh3")
    ss = shingle_hashes(["é😀x"], rep, unique=False)
    m = lambda s: mmh3.hash(s.encode(), 0, signed=False)  # noqa: E731
    assert ss.of(0).tolist() == [m("é😀"), m("😀x")]


def test_empty_corpus():
    for unique in (True, False):
        ss = shingle_hashes([], R(), unique=unique)
        assert ss.n == 0 and ss.offsets.tolist() == [0] and len(ss.hashes) == 0


def test_many_documents_parallel_path():
    rng = np.random.default_rng(3)
    vocab = [f"w{i}" for i in range(50)] + ["ü", "漢", "😀"]
    texts = [" ".join(rng.choice(vocab, int(rng.integers(0, 40)))) for _ in range(500)]
    for rep in (R(k=3), R(shingle="char", k=5, hashfunc="mmh3")):
        ss = shingle_hashes(texts, rep, unique=False)
        su = shingle_hashes(texts, rep, unique=True)
        for d, t in enumerate(texts):
            ref = ref_hashes(t, rep)
            assert ss.of(d).tolist() == ref
            assert su.of(d).tolist() == sorted(set(ref))
