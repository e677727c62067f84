"""``calib draw --design corpus --engine spark``: the corpus draw with its passes on Spark.

The pass over the corpus (the loose LSH pass, the candidates and their verify
estimates) runs as a Spark job (:func:`calib.production.engines.spark.draw.loose_scan`);
what they find is put into the local draw's :class:`calib.labeling.corpus_draw.Scan`
and the local :func:`calib.labeling.corpus_draw.draw_scan` draws from it, the
drawn pairs' texts read by one more Spark read. So the sampling is the same
code: the same corpus and seed give the same drawn pairs and design.json as
``--engine local``.
"""

from __future__ import annotations

from calib.labeling.corpus_draw import (DEFAULT_LOOSE, VERIFY_HASHES, Scan, check_scan_options, corpus_identity,
                                       draw_scan)
from calib.labeling.drawn import DEFAULT_REP, MAX_PAIRS, DrawError, DrawnSet, check_options
from calib.reading.corpus import ApplyError, unreviewable_id
from calib.reading.corpus_design import DEFAULT_CORPUS_EDGES
from calib.sketches.represent import Representation


def scan_spark(corpus: str, *, rep: Representation = DEFAULT_REP, edges=DEFAULT_CORPUS_EDGES,
               loose: tuple[int, int] = DEFAULT_LOOSE, max_pairs: int | None = 50_000_000, batch_size: int = 10_000,
               id_field: str = "id", text_field: str = "text", scheme: str = "oph", spark=None,
               progress=None) -> tuple[Scan, object]:
    """The local ``scan`` of ``corpus`` computed on Spark: (the Scan, a fetch of documents' texts for
    ``draw_scan``). Options are checked as locally, before the job."""
    b, r, cut = check_scan_options(rep, edges, loose, scheme, max_pairs)
    from calib.production.engines.spark.draw import loose_scan
    try:
        corpus, sha = corpus_identity(corpus)
        s = loose_scan(str(corpus), rep=rep, b=b, r=r, verify=VERIFY_HASHES, cut=cut,
                       max_pairs=max_pairs, batch_size=batch_size, id_field=id_field, text_field=text_field,
                       scheme=scheme, spark=spark, progress=progress)
    except ApplyError as exc:
        raise DrawError(str(exc)) from None
    bad = next((k for k, x in enumerate(s.ids) if unreviewable_id(x)), None)  # the local pass refuses these by line
    if bad is not None:
        raise DrawError(f"{corpus}: non-empty document {bad + 1:,}: field {id_field!r}: {unreviewable_id(s.ids[bad])}: "
                        "its pairs could never be labeled")
    if len(s.ids) < 2:
        raise DrawError(f"{corpus}: {len(s.ids)} non-empty document{'s' if len(s.ids) != 1 else ''}; a draw needs 2")
    sc = Scan(str(corpus), rep, tuple(float(e) for e in edges), b, r, cut, scheme, s.ids, s.ci, s.cj,
              s.agree / float(VERIFY_HASHES), s.n_cand, s.skipped_empty, {}, sha)
    return sc, s.fetch


def draw_corpus_spark(corpus: str, *, pairs: int = 500, seed: int = 0, uniform_share: float = 0.1,
                      spark=None, progress=None, **scan_options) -> DrawnSet:
    """:func:`calib.labeling.corpus_draw.draw_corpus` with the passes on Spark (``scan_options``: those of
    :func:`scan_spark`)."""
    check_options(pairs, uniform_share, seed, MAX_PAIRS)  # before the job
    sc, fetch = scan_spark(corpus, spark=spark, progress=progress, **scan_options)

    def texts(idx):
        try:
            return fetch(idx)
        except ApplyError as exc:
            raise DrawError(str(exc)) from None
    return draw_scan(sc, pairs=pairs, seed=seed, uniform_share=uniform_share, fetch=texts)
