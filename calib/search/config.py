"""A dedup configuration: the decision a calibration recommends.

representation (normalization, shingles, hash, num_perm, seed, scheme)
-> LSH split (b bands of r rows) -> verification (:class:`Verify`: ``exact``
similarity of the shingle sets, ``estimated`` from the signatures, or
``none``: every LSH candidate is a duplicate) of the ``measure`` (Jaccard or
containment, :mod:`calib.verification.measures`) at ``threshold`` -> clustering ``policy``
and ``representative`` rule.

Every field is declared once, with :func:`calib.base.fields.setting`; the
results-row columns (:func:`config_columns`), :func:`config_from_row`, the
config document's sections (:meth:`Config.doc_sections`) and the Sweep page's
columns (:func:`table_columns`) are all read off the dataclass fields. To add a
setting: declare the field here (or in :class:`~calib.sketches.represent.Representation`)
with its help, document place and default; add its property to
``config.schema.json`` (a test checks they agree); and, to sweep it, an
:func:`~calib.base.fields.axis` on :class:`calib.search.grid.Grid`.

"No threshold" (rule ``none``) is ``None`` everywhere: in a Config, in the
config document (JSON ``null``) and, since a float column cannot hold None,
as NaN (pandas' missing value) in a results table.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields

import numpy as np

from calib.base.named import Named
from calib.clusters.clustering import POLICIES, REPRESENTATIVE_RULES, Policy, Representative  # noqa: F401 (public here too)
from calib.base.fields import from_cell, is_missing, setting, to_cell, unset
from calib.candidates.lsh import check_split, s_at_probability, threshold_approx
from calib.verification.measures import MEASURE_NAMES, get_measure
from calib.sketches.represent import Representation
from calib.verification.short import SHORT_RULES


class Verify(Named):
    """How LSH candidates are verified. A ``str``: ``Verify.EXACT == "exact"``."""

    EXACT = "exact"          # exact Jaccard of the shingle sets >= threshold
    ESTIMATED = "estimated"  # MinHash estimate from the signatures >= threshold
    NONE = "none"            # no verification: every candidate pair is a duplicate


Verify.what = "verification rule"

VERIFY_RULES = Verify.names()


MAX_MIN_SHINGLES = 2**31 - 1  # a shingle count per document: an int32 column in the results rows

def _max_component(v) -> int:
    return int(v)


@dataclass(frozen=True)
class Config:
    rep: Representation = setting(default_factory=Representation, help="how texts become shingle sets and signatures",
                                  doc=("representation", ""))
    b: int = setting(16, help="LSH bands", doc=("lsh", "b"))
    r: int = setting(8, help="rows (hashes) per band", doc=("lsh", "r"), then=("rows_used", "lsh_threshold", "s50"),
                     table_then=("s50",))
    verify: Verify = setting(Verify.EXACT, help="exact, estimated or none (every LSH candidate is a duplicate)",
                             doc=("verification", "rule"))
    threshold: float | None = setting(0.8, help="final threshold of verification on the measure (None: rule none)",
                                      doc=("verification", "threshold"), none_as=float("nan"))
    policy: Policy = setting(Policy.CONNECTED,
                             help="clustering: connected components or star around a representative",
                             doc=("clustering", "policy"))
    representative: Representative = setting(Representative.FIRST,
                                             help="which document each cluster keeps: first, longest, priority, "
                                                  "medoid, random, union_size (datatrove), union_rank (text-dedup)",
                                             doc=("clustering", "representative"), table=False)
    max_component: int | None = setting(None, help="giant-component guard: larger components get the star rule",
                                        doc=("clustering", "max_component"), table=False, none_as=0,
                                        parse=_max_component)
    # Last, so positional Config(rep, b, r, verify, threshold, ...) calls keep their meaning.
    measure: str = setting("jaccard", help="similarity verified: jaccard |A&B|/|A|B|, or containment |A&B|/|A| "
                                           "of the smaller set A (keeps the longer document)",
                           doc=("verification", "measure"), doc_if_set=True)
    # Set-only (left out while 0, so configs without it keep their fingerprint): documents with fewer shingles than this (0: off) are short (calib.verification.short).
    min_shingles: int = setting(0, help="minimum length: documents with fewer distinct shingles are short "
                                "(0: off)", doc=("short_docs", "min_shingles"), doc_if_set=True, row_if_set=True)
    short_docs: str = setting("exclude", help="short documents: exclude (from near-duplicate detection, kept and "
                              "counted) or exact (matched by equal normalized text only)",
                              doc=("short_docs", "rule"), doc_if_set=True, row_if_set=True, table=False)

    def __post_init__(self) -> None:
        check_split(self.b, self.r, self.rep.num_perm)
        try:
            verify = Verify.parse(self.verify)
        except ValueError:
            raise ValueError(f"Config.verify must be one of {VERIFY_RULES}, got {self.verify!r}") from None
        object.__setattr__(self, "verify", verify)
        try:
            measure = get_measure(self.measure)
        except ValueError:
            raise ValueError(f"Config.measure must be one of {MEASURE_NAMES}, got {self.measure!r}") from None
        object.__setattr__(self, "measure", measure.name)
        t = self.threshold
        if verify is Verify.NONE:
            t = None  # nothing is compared with a threshold (0.0 and NaN, its old spellings, included)
        elif isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or is_missing(t) \
                or not 0.0 <= float(t) <= 1.0:
            raise ValueError(f"Config.threshold must be a number in [0, 1], got {t!r}")
        # Canonical values, so equal decisions fingerprint alike.
        object.__setattr__(self, "b", int(self.b))
        object.__setattr__(self, "r", int(self.r))
        object.__setattr__(self, "threshold", None if t is None else float(t))
        for name, kind in (("policy", Policy), ("representative", Representative)):
            try:
                object.__setattr__(self, name, kind.parse(getattr(self, name)))
            except ValueError:
                raise ValueError(f"Config.{name} must be one of {kind.names()}, got {getattr(self, name)!r}") from None
        if self.max_component is not None and (isinstance(self.max_component, bool) or
                                               not isinstance(self.max_component, (int, np.integer)) or
                                               self.max_component < 2):
            raise ValueError(f"Config.max_component must be None or an integer >= 2, got {self.max_component!r}")
        if self.max_component is not None:
            object.__setattr__(self, "max_component", int(self.max_component))
        m = self.min_shingles
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 0 <= m <= MAX_MIN_SHINGLES:
            raise ValueError(f"Config.min_shingles must be an integer from 0 to {MAX_MIN_SHINGLES:,}, got {m!r}")
        if self.short_docs not in SHORT_RULES:
            raise ValueError(f"Config.short_docs must be one of {SHORT_RULES}, got {self.short_docs!r}")
        object.__setattr__(self, "min_shingles", int(m))
        if not m:  # no minimum length, no short document: one spelling of "off"
            object.__setattr__(self, "short_docs", "exclude")
        if self.rep.weighting != "none" and measure.name != "weighted_jaccard":
            raise ValueError(f"Config.measure must be weighted_jaccard for weighting {self.rep.weighting!r} "
                             f"(the signatures estimate weighted Jaccard), got {measure.name!r}")
        if measure.keep is not None and self.representative != measure.keep:
            raise ValueError(f"Config.measure {measure.name} keeps the {measure.keep} document of a cluster "
                             f"(representative={measure.keep!r}), got representative={self.representative!r}")

    # -- verification ---------------------------------------------------------
    def similarity(self, exact: np.ndarray, estimated: np.ndarray) -> np.ndarray:
        """The similarity this rule compares with the threshold (exact or estimated J)."""
        return exact if self.verify is Verify.EXACT else estimated

    def passes(self, similarity: np.ndarray) -> np.ndarray:
        """Which pairs with this :meth:`similarity` are verified (all of them for rule none)."""
        s = np.asarray(similarity)
        return np.ones(len(s), bool) if self.verify is Verify.NONE else s >= self.threshold

    # -- identity ---------------------------------------------------------------
    def to_dict(self) -> dict:
        d = asdict(self)
        d["rep"] = self.rep.to_dict()
        d["verify"] = self.verify.value
        return d

    @classmethod
    def from_row(cls, row) -> "Config":
        """The Config a results row describes (see :func:`config_from_row`)."""
        return config_from_row(row)

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        d = dict(d)
        d["rep"] = Representation.from_dict(d.get("rep", {}))
        return cls(**d)

    def fingerprint(self) -> str:
        """First 12 hex digits of sha256 of the canonical JSON. The hashed form
        writes "no threshold" as 0.0, as fingerprints were first defined, so the
        fingerprints of earlier exports stay valid. Computed once per object (it is frozen)."""
        fp = self.__dict__.get("_fingerprint")
        if fp is None:
            fp = self._fingerprint_of()
            object.__setattr__(self, "_fingerprint", fp)
        return fp

    def _fingerprint_of(self) -> str:
        d = self.to_dict()
        d["rep"] = self.rep.hashed_dict()  # renamed values under their first names, likewise
        if d["threshold"] is None:
            d["threshold"] = 0.0
        if d["measure"] == "jaccard":  # the measure every config had before it was a field
            del d["measure"]
        for f in fields(self):  # likewise every set-only field left unset
            if unset(self, f):
                del d[f.name]
        canon = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canon.encode()).hexdigest()[:12]

    @property
    def rows_used(self) -> int:
        return self.b * self.r

    @property
    def lsh_threshold(self) -> float:
        return threshold_approx(self.b, self.r)

    @property
    def s50(self) -> float:
        return s_at_probability(self.b, self.r, 0.5)

    # -- the config document's sections -------------------------------------------
    def doc_sections(self) -> dict:
        """``representation``, ``lsh``, ``verification``, ``clustering`` of the
        exported config document, from the fields' ``doc`` places."""
        out: dict = {"representation": self.rep.to_dict()}
        for f in fields(self):
            section, key = f.metadata["doc"]
            if f.name == "rep":
                continue
            v = getattr(self, f.name)
            if f.metadata["doc_if_set"] and v == f.default:
                continue
            sec = out.setdefault(section, {})
            sec[key] = v.value if isinstance(v, Named) else v
            for prop in f.metadata["then"]:
                sec[prop] = getattr(self, prop)
        return out

    @classmethod
    def from_doc_sections(cls, doc: dict) -> "Config":
        """The Config of a config document (inverse of :meth:`doc_sections`);
        a field missing from the document takes its default."""
        kw = {}
        for f in fields(cls):
            section, key = f.metadata["doc"]
            if f.name == "rep":
                kw["rep"] = Representation.from_dict(doc[section])
            elif key in (doc.get(section) or {}):
                kw[f.name] = doc[section][key]
        return cls(**kw)

    def verification_label(self) -> str:
        """``exact J >= 0.8`` (``exact C >= 0.8`` for containment), or ``no verification``."""
        sym = get_measure(self.measure).symbol
        return "no verification" if self.verify is Verify.NONE else f"{self.verify} {sym} >= {self.threshold:g}"

    def __str__(self) -> str:
        v = self.verification_label()
        guard = f", star above {self.max_component}" if self.max_component else ""
        return (f"{self.rep} | LSH b={self.b} r={self.r} (P=0.5 at s={self.s50:.2f}) | {v} | "
                f"{self.policy} clusters{guard}, keep {self.representative}")


# -- results rows ----------------------------------------------------------------

def config_columns(cfg: Config) -> dict:
    """A configuration's columns in a results row: the representation label,
    every Representation and Config field (and the derived values that follow
    them), both fingerprints."""
    rep = cfg.rep
    row = {"representation": rep.label()}
    # a doc_if_set field at its default adds no column: rows of earlier configurations keep their bytes
    row.update({f.name: to_cell(getattr(rep, f.name), f) for f in fields(Representation)
                if not (f.metadata["doc_if_set"] and getattr(rep, f.name) == f.default)})
    for f in fields(Config):
        if f.name == "rep" or unset(cfg, f):
            continue
        row[f.name] = to_cell(getattr(cfg, f.name), f)
        row.update({p: getattr(cfg, p) for p in f.metadata["then"]})
    row["rep_fingerprint"] = rep.fingerprint()
    row["config_fingerprint"] = cfg.fingerprint()
    return row


def fill_unset(frame):
    """A results table whose set-only columns (present when some row set them) hold
    the default, not a gap, in the other rows."""
    for cls in (Representation, Config):
        for f in fields(cls):
            if f.metadata.get("row_if_set") and f.name in frame:
                frame[f.name] = frame[f.name].fillna(f.default).astype(type(f.default))
    return frame


def config_from_row(row) -> Config:
    """The Config a results row describes (a column the row lacks, e.g. in a
    table written before the field existed, takes the field's default)."""
    def kwargs(cls, skip=()):
        # an empty cell of a doc_if_set field (a row that left it out beside one that has it) is its default
        return {f.name: from_cell(row[f.name], f) for f in fields(cls) if f.name not in skip and f.name in row
                and not (f.metadata["doc_if_set"] and is_missing(row[f.name]))}
    return Config(Representation(**kwargs(Representation)), **kwargs(Config, skip=("rep",)))


def table_columns() -> list[str]:
    """The configuration columns the Sweep page's table shows, in row order."""
    cols = ["representation"] + [f.name for f in fields(Representation) if f.metadata["table"]]
    for f in fields(Config):
        if f.name != "rep" and f.metadata["table"]:
            cols.append(f.name)
            cols.extend(f.metadata["table_then"])
    return cols
