"""text-dedup target, pinned to text-dedup 0.4.0 (``python -m text_dedup.minhash`` with click flags).

Read against ChenghaoMou/text-dedup at tag 0.4.0: text_dedup/minhash.py,
text_dedup/utils/args.py (IOArgs, MinHashArgs), utils/tokenization.py,
utils/union_find.py and utils/load.py. Version 0.4.1 replaced the flags with
config.toml keys (``ngram_size``, ``bands``, ``rows``, ``hash_func_name``,
``check_false_positive``; src/text_dedup/config/algorithms/minhash.py): this
target writes the 0.4.0 form only.

What 0.4.0 does, each a difference from calib:

* ``--seed`` is accepted and ignored: permutations come from the module-level
  ``RNG = np.random.RandomState(42)``.
* Tokens: ``re.split(r"\\W", text.lower())`` - every single non-word character
  splits, so adjacent ones leave empty tokens; no NFKC; underscore is a word
  character. n-grams are joined by a space; a text with fewer than ``ngram``
  tokens is one shingle.
* ``--min_length N`` drops (from the output) every text with fewer than N
  tokens; ``--min_length 0`` keeps them, but every empty text then has the
  same single shingle (the empty string) and they all collapse into one cluster.
* With ``--b``/``--r`` given, ``--threshold`` is unused: no verification.
* Clusters: ``uf.union(x, min(bucket))`` with union by rank; equal ranks make
  the first argument the root, so a lone pair keeps the LARGER index.
* ``--local`` loads with ``datasets.load_from_disk``: the input must be a
  folder written by ``Dataset.save_to_disk`` (not a JSONL file).
* No Jaccard check after LSH in 0.4.0. 0.4.1 (tag 0.4.1, 2025-12-28) adds
  ``check_false_positive`` (src/text_dedup/minhash.py ``check_false_positives``:
  the exact Jaccard of every pair of an LSH cluster on its own n-grams, pairs
  below ``threshold`` dropped, clusters re-formed), in its config.toml form only;
  the pinned 0.4.0 cannot use it.

calib's pre-steps (:mod:`calib.production.targets._presteps`) run in the script
before text-dedup, where the target is evaluated under the config's own
normalization: a Python step writes the dataset folder with a ``calib_text``
column (boilerplate lines of the exported stoplist stripped; a short document's
column, or one with no shingle, a unique sentinel, one token no other text has:
never a candidate, kept, where text-dedup would put every empty text in one cluster)
and text-dedup reads that column.
"""

from __future__ import annotations

from dataclasses import replace

from calib.base.version import __version__
from calib.clusters.clustering import Policy, Representative
from calib.search.capabilities import Capabilities, common
from calib.search.config import Verify
from calib.sketches.represent import Representation
from calib.production.targets.target import LACKS, Target, measure_unsupported
from calib.production.targets._presteps import PRE_STEPS, hostable, kept, pre_steps, pre_steps_note, prestep_source
from calib.production.targets._source import shingling_source

TOOL = "text-dedup==0.4.0"


def project(config):
    """The config as text-dedup 0.4.0 runs it, evaluated with calib's closest representation
    (lowercase, punctuation stripped, no NFKC, word k-grams), the same b x r banding, no
    verification, union by rank (:data:`CAPABILITIES`); calib's boilerplate stripping (where the
    config is normalized as that closest representation) and minimum length run first by the script."""
    projected = common(config, CAPABILITIES)
    rep = projected.rep
    closest = Representation(lowercase=True, nfkc=False, strip_punct=True, collapse_ws=True, shingle="word", k=rep.k,
                             hashfunc=rep.hashfunc, num_perm=rep.num_perm, seed=rep.seed, scheme=rep.scheme,
                             strip_lines=rep.strip_lines)
    return hostable(config, replace(projected, rep=closest, verify=Verify.NONE, policy=Policy.CONNECTED,
                                    representative=Representative.UNION_RANK, max_component=None))


CAPABILITIES = Capabilities(name="text_dedup", project=project, shingles=("word",), normalization="text_dedup",
                            verify=("none",), policies=("connected",), keep="union_rank", lacks=LACKS,
                            pre_steps=PRE_STEPS, tool=TOOL)


def _prepare_step(config, closest, keep: tuple[str, ...]) -> str:
    """The shell lines that write $DATASET from the JSONL $CORPUS with calib's pre-steps applied."""
    return f'''# calib's pre-steps, before text-dedup: $CORPUS (JSONL, a "text" field) -> $DATASET with a
# calib_text column (stoplist lines stripped; short documents a unique sentinel, kept);
# CALIB_EXPORT_DIR: the export folder (config.json, stoplist.json; default: this script's).
python - "$CORPUS" "$DATASET" <<'CALIB_PRESTEPS'
from __future__ import annotations
{shingling_source(closest)}
{prestep_source(config, keep)}

def calib_text(text, number):
    """The text text-dedup reads: stripped; a short text, or one with no shingle (text-dedup would give
    every such text the same single shingle), a token of its own: never a candidate, kept."""
    text, short = prepare(text)
    return "calibshort" + hashlib.sha256(str(number).encode()).hexdigest() if short or not shingles(text) else text


if __name__ == "__main__":
    import datasets
    ds = datasets.load_dataset("json", data_files=sys.argv[1], split="train")
    ds = ds.map(lambda rec, k: {{"calib_text": calib_text(rec["text"], k)}}, with_indices=True)
    ds.save_to_disk(sys.argv[2])
CALIB_PRESTEPS
'''


def _snippet(config, args: dict, prepare: str) -> str:
    from calib.production.manifest import NOTICE
    flags = " \\\n    ".join(f"--{k} {v}" for k, v in args.items())
    return f'''#!/bin/sh
# text-dedup target generated by calib {__version__} for config {config.fingerprint()} ({TOOL}).
# {NOTICE}
# Pinned to text-dedup 0.4.0 (0.4.1 takes a config.toml instead of these flags).
# Not equivalent to the calibrated config: see text_dedup.unsupported in targets.json
# (no verification, its own tokens, --seed ignored, keeps the larger index of a pair).
# Usage: CORPUS=corpus.jsonl[.gz] DATASET=folder OUTPUT=folder sh text_dedup_target.sh
# --local needs a folder written by datasets' Dataset.save_to_disk: the step below writes
# $DATASET from $CORPUS (datasets' load_dataset('json', ...)) with calib's pre-steps applied.
set -eu
export CALIB_EXPORT_DIR="${{CALIB_EXPORT_DIR:-$(dirname "$0")}}"
{prepare}python -m text_dedup.minhash \\
    --path "$DATASET" --local --output "$OUTPUT" --column calib_text \\
    {flags}
'''


def target(config) -> Target:
    rep = config.rep
    engine = project(config)
    closest = engine.rep
    keep = kept(config, engine)
    unsupported = [
        {"field": "/representation/seed", "value": rep.seed,
         "reason": "text-dedup 0.4.0 ignores --seed: permutations come from RandomState(42), modulo 2^61 - 1 "
                   "(not calib's permutations)"},
        {"field": "/representation", "value": f"{rep.shingle_label()} [{rep.normalization_label()}]",
         "reason": "tokens are re.split(r'\\W', text.lower()): lowercase, no NFKC, every non-word character splits "
                   "(empty tokens between adjacent ones), underscore kept; evaluated with calib's closest: "
                   "lowercase, punctuation stripped, no NFKC, word shingles"},
        {"field": "/representation/hashfunc", "value": rep.hashfunc,
         "reason": "--hash_func is sha1 (written) or xxh3; shingles hash their space-joined UTF-8 bytes"},
        {"field": "/min_length", "value": 0,
         "reason": "--min_length 0 keeps short texts, but every empty text gets the same single (empty) shingle, "
                   "so all empty texts would collapse into one cluster (a positive value drops short texts from the "
                   "output): the script's pre-step writes a token of its own for each text with no shingle, so, as "
                   "in calib, none is a candidate"},
    ]
    if rep.shingle == "char":
        unsupported.append({"field": "/representation/shingle", "value": "char",
                            "reason": "text-dedup's minhash shingles word n-grams only"})
    if config.verify is not Verify.NONE:
        unsupported.append({"field": "/verification/rule", "value": config.verify,
                            "reason": "with --b/--r given, --threshold is unused: every band collision is a duplicate "
                                      "(evaluated with verification 'none')"})
    unsupported.append({"field": "/clustering", "value": f"{config.policy}/{config.representative}",
                        "reason": "union-find with union by rank, uf.union(x, min(bucket)): the first argument's root "
                                  "wins ties, so a lone pair keeps the larger index (calib's union_rank rule)"})
    # --threshold is unused once --b/--r are given; written only when the config has one, for the reader
    args = {"ngram": rep.k, "num_perm": rep.num_perm, "b": config.b, "r": config.r,
            **({"threshold": config.threshold} if config.threshold is not None else {}),
            "hash_func": "sha1", "min_length": 0}
    return Target(
        name="text_dedup", title="text-dedup", tool=TOOL, file="text_dedup_target.sh",
        parameters={"args": args, "pre_steps": pre_steps(config, keep)},
        snippet=_snippet(config, args, _prepare_step(config, closest, keep)),
        unsupported=tuple(measure_unsupported(config, keep) + unsupported),
        kept="the union-find root of each cluster (union by rank, union(x, min(bucket))): the larger document index "
             "of a lone pair; in larger clusters the root of the higher-rank side",
        engine_config=engine,
        engine_note="calib's closest representation (lowercase, punctuation stripped, no NFKC, word k-grams) and "
                    "signatures, the same b x r banding, no verification, union by rank (calib's union_rank rule)" +
                    pre_steps_note(keep),
        docs=("ChenghaoMou/text-dedup tag 0.4.0: text_dedup/minhash.py, text_dedup/utils/args.py, "
              "text_dedup/utils/tokenization.py, text_dedup/utils/union_find.py, text_dedup/utils/load.py",
              "ChenghaoMou/text-dedup tag 0.4.1: src/text_dedup/config/algorithms/minhash.py (config.toml keys)"))
