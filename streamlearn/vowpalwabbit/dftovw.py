"""VW 9's ``vowpalwabbit.dftovw``: a pandas DataFrame's rows as VW text lines.

``from streamlearn.vowpalwabbit.dftovw import DFtoVW, SimpleLabel, Feature, Namespace`` in
place of VW's, with the same classes (:class:`SimpleLabel`, :class:`MulticlassLabel`,
:class:`MultiLabel`, :class:`ContextualbanditLabel`, :class:`Feature`, :class:`Namespace`,
:class:`DFtoVW` and its ``from_column_names``/``from_colnames``) and the same lines, byte for
byte (``tests/vowpalwabbit/test_dftovw.py`` compares with VW's module on the same frames):

* a row is ``label [weight] tag|ns[:value] name:value name=value ...``: a number column's
  feature is ``name:value``, any other ``name=value`` (``as_type`` chooses); values are the
  cells' ``str``, an empty cell is no feature (its separator stays: two spaces);
* names VW text cannot hold are renamed with a warning (``:`` and ``|`` become spaces, the
  ends stripped, spaces become ``_``), feature names and string values alike;
* the columns are checked before any row is written: present, of the label's type (an
  integer column for a class, numbers for a simple label), in range (classes from 1, a
  probability in [0, 1]); an error names the argument, the class and the column.

Needs pandas (``pip install -e '.[dftovw]'``).  The lines go to a
:class:`~streamlearn.vowpalwabbit.Workspace` (``ws.learn(line)``) or a file for ``sl vw``.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable

import numpy as np

try:
    import pandas as pd
except ImportError as e:  # pragma: no cover - the extra's absence
    raise ImportError("streamlearn.vowpalwabbit.dftovw needs pandas: "
                      "pip install -e '.[dftovw]'") from e

__all__ = ["ContextualbanditLabel", "DFtoVW", "Feature", "MultiLabel", "MulticlassLabel",
           "Namespace", "SimpleLabel"]  # fmt: skip

_KINDS = {int: np.integer, float: np.floating, str: np.dtype("O"), object: np.dtype("O")}


def valid_name(name: object) -> str:
    """``name`` as VW text can hold it (no ``:``, ``|`` or space), with a warning when it
    had to change."""
    text = str(name)
    fixed = text.replace(":", " ").replace("|", " ").strip().replace(" ", "_")
    if fixed != text:
        warnings.warn(f"Name '{text}' was not a valid feature/namespace name. It has been "
                      f"renamed '{fixed}'", stacklevel=3)  # fmt: skip
    return fixed


class _Column:
    """One column a label, a tag or a feature reads, with what its cells may hold."""

    def __init__(self, name: Hashable, kinds: tuple, low: float | None = None,
                 high: float | None = None) -> None:  # fmt: skip
        self.colname = name
        self.kinds = kinds
        self.low = low
        self.high = high

    def text(self, df: pd.DataFrame) -> pd.Series:
        """The cells as text (an empty cell: ``""``)."""
        try:
            col = df[self.colname]
        except KeyError:
            raise KeyError(f"column '{self.colname}' not found in dataframe") from None
        return col.astype(object).map(lambda v: "" if _missing(v) else str(v))

    def is_number(self, df: pd.DataFrame) -> bool:
        return pd.api.types.is_numeric_dtype(df[self.colname])

    def check(self, df: pd.DataFrame, owner: str, attribute: str) -> None:
        """Refuse a column of another type, or a cell out of range."""
        dtype = df[self.colname].dtype
        ok = str in self.kinds and pd.api.types.is_string_dtype(dtype)
        if not ok:
            ok = any(_subtype(dtype, _KINDS[k]) for k in self.kinds)
        if not ok:
            names = ", ".join(repr(k.__name__) for k in self.kinds)
            raise TypeError(f"In argument '{attribute}' of '{owner}', column '{self.colname}' "
                            f"should be either of the following type(s): {names}.")  # fmt: skip
        if self.low is None:
            return
        col = df[self.colname]
        if self.high is not None and not ((col >= self.low).all() and (col <= self.high).all()):
            raise ValueError(f"In argument '{attribute}' of '{owner}', column '{self.colname}' "
                             f"must be >= {self.low} and <= {self.high}.")  # fmt: skip
        if self.high is None and not (col >= self.low).all():
            raise ValueError(f"In argument '{attribute}' of '{owner}', column '{self.colname}' "
                             f"must be >= {self.low}.")  # fmt: skip


def _missing(v: object) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):  # (a list in a cell)
        return False


def _subtype(dtype: object, kind: object) -> bool:
    try:
        return bool(np.issubdtype(dtype, kind))
    except TypeError:  # pandas' own dtypes
        return False


class _Reads:
    """A part of a row (a label, a tag, a feature) and the columns it reads: each
    attribute named in ``COLUMNS`` holds a column name (or a list of them), kept as
    :class:`_Column` with its type and range."""

    COLUMNS: dict[str, tuple] = {}

    def __setattr__(self, name: str, value: object) -> None:
        spec = self.COLUMNS.get(name)
        if spec is not None and value is not None:
            names = value if isinstance(value, list) else [value]
            self.__dict__.setdefault("columns", set()).update(names)
            cols = [_Column(n, *spec) for n in names]
            value = cols if isinstance(value, list) else cols[0]
        elif spec is not None:
            self.__dict__.setdefault("columns", set())
        object.__setattr__(self, name, value)

    def check(self, df: pd.DataFrame) -> None:
        for attribute in self.COLUMNS:
            value = getattr(self, attribute, None)
            for col in value if isinstance(value, list) else [value]:
                if col is not None:
                    col.check(df, type(self).__name__, attribute)


class SimpleLabel(_Reads):
    """A regression or binary label (a number column), with an optional weight column."""

    COLUMNS = {"label": ((int, float),), "weight": ((int, float),)}

    def __init__(self, label: Hashable, weight: Hashable | None = None) -> None:
        self.label = label
        self.weight = weight

    def process(self, df: pd.DataFrame) -> pd.Series:
        out = self.label.text(df)
        return out if self.weight is None else out + " " + self.weight.text(df)


class MulticlassLabel(SimpleLabel):
    """A class (an integer column, from 1), with an optional weight column (from 0)."""

    COLUMNS = {"label": ((int,), 1), "weight": ((int, float), 0)}


class MultiLabel(_Reads):
    """Classes (integer columns, from 1), written ``a,b,...``."""

    COLUMNS = {"label": ((int,), 1)}

    def __init__(self, label: Hashable | list) -> None:
        self.label = label

    def process(self, df: pd.DataFrame) -> pd.Series:
        cols = self.label if isinstance(self.label, list) else [self.label]
        out = cols[0].text(df)
        for col in cols[1:]:
            out = out + "," + col.text(df)
        return out


class ContextualbanditLabel(_Reads):
    """A logged action (from 1), its cost and its probability (in [0, 1]):
    ``action:cost:probability``."""

    COLUMNS = {"action": ((int,), 1), "cost": ((float, int),),
               "probability": ((float,), 0, 1)}  # fmt: skip

    def __init__(self, action: Hashable, cost: Hashable, probability: Hashable) -> None:
        self.action = action
        self.cost = cost
        self.probability = probability

    def process(self, df: pd.DataFrame) -> pd.Series:
        return (self.action.text(df) + ":" + self.cost.text(df) + ":"
                + self.probability.text(df))  # fmt: skip


class Feature(_Reads):
    """A column as a feature named after it (or ``rename_feature``): ``name:value`` for a
    number column, ``name=value`` for any other (``as_type``: ``"numerical"`` or
    ``"categorical"`` decides)."""

    COLUMNS = {"value": ((str, int, float),)}

    def __init__(self, value: Hashable, rename_feature: str | None = None,
                 as_type: str | None = None) -> None:  # fmt: skip
        self.value = value
        self.name = valid_name(rename_feature if rename_feature is not None else value)
        if as_type not in (None, "numerical", "categorical"):
            raise ValueError("Argument 'as_type' can either be 'numerical' or 'categorical'")
        self.as_type = as_type

    def process(self, df: pd.DataFrame, ensure_valid_values: bool = True) -> pd.Series:
        cells = self.value.text(df)
        numeric = self.value.is_number(df) if self.as_type is None else \
            self.as_type == "numerical"  # fmt: skip
        if ensure_valid_values:
            cells = cells.map(valid_name)
        return cells.where(cells == "", self.name + (":" if numeric else "=") + cells)


class _Tag(_Reads):
    COLUMNS = {"tag": ((str, int, float),)}

    def __init__(self, tag: Hashable) -> None:
        self.tag = tag

    def process(self, df: pd.DataFrame) -> pd.Series:
        return self.tag.text(df)


class Namespace:
    """Features under one namespace (``|name`` or ``|name:value``, the value scaling them;
    unnamed: VW's default namespace)."""

    def __init__(self, features: Feature | list, name: str | float | None = None,
                 value: float | None = None) -> None:  # fmt: skip
        if value is not None and not name:
            raise ValueError("Namespace can't have a 'value' argument without a 'name' "
                             "argument or an empty string 'name' argument")  # fmt: skip
        self.name = valid_name(name) if name else None
        self.value = value
        self.features = list(features) if isinstance(features, list | set) else [features]
        if self.name is not None and not isinstance(name, str | int | float):
            raise TypeError("In Namespace, argument 'name' should be either of the following "
                            "type(s): 'str', 'int', 'float'")  # fmt: skip
        if value is not None and not isinstance(value, int | float):
            raise TypeError("In Namespace, argument 'value' should be either of the "
                            "following type(s): 'int', 'float'")  # fmt: skip
        if not all(isinstance(f, Feature) for f in self.features):
            raise TypeError("In Namespace, argument 'features' should be a Feature or a list "
                            "of Feature.")  # fmt: skip

    def process(self) -> str:
        if self.name is None:
            return "|"
        return f"|{self.name}" + ("" if self.value is None else f":{self.value}")


_LISTABLE = {"ContextualbanditLabel": " ", "MultiLabel": ","}
"""The labels a list may hold (one kind), and what separates them in a line."""


class _Labels(_Reads):
    """A list of labels of one kind (:data:`_LISTABLE`)."""

    def __init__(self, labels: list) -> None:
        kinds = {type(x).__name__ for x in labels}
        if len(kinds) > 1:
            raise TypeError("The list passed in 'label' has mixed label types.")
        if not all(type(x).__name__ in _LISTABLE and isinstance(x, _Reads) for x in labels):
            raise TypeError("The only labels that can be used with list are "
                            "'ContextualbanditLabel', 'MultiLabel'.")  # fmt: skip
        self.labels = labels
        self.sep = _LISTABLE[kinds.pop()]
        self.__dict__["columns"] = set().union(*(x.columns for x in labels))

    def __getitem__(self, i: int) -> _Reads:
        return self.labels[i]

    def __iter__(self):  # noqa: ANN204
        return iter(self.labels)

    def __len__(self) -> int:
        return len(self.labels)

    def check(self, df: pd.DataFrame) -> None:
        for x in self.labels:
            x.check(df)

    def process(self, df: pd.DataFrame) -> pd.Series:
        out = self.labels[0].process(df)
        for x in self.labels[1:]:
            out = out + self.sep + x.process(df)
        return out


_LABELS = (SimpleLabel, MulticlassLabel, MultiLabel, ContextualbanditLabel)


class DFtoVW:
    """A DataFrame's rows as VW lines: a label, a tag column, and features, either
    ``features`` (in VW's default namespace) or ``namespaces``; :meth:`convert_df` writes
    them.  :meth:`from_column_names` builds one from column names alone."""

    def __init__(self, df: pd.DataFrame, features: Feature | list | None = None,
                 namespaces: Namespace | list | None = None, label: object = None,
                 tag: Hashable | None = None) -> None:  # fmt: skip
        self.df = df
        self.n_rows = df.shape[0]
        self.label = _Labels(label) if isinstance(label, list) else label
        self.tag = _Tag(tag) if tag else None
        first = self.label[0] if isinstance(self.label, _Labels) else self.label
        if label is not None and not isinstance(first, _LABELS):
            raise TypeError("Argument 'label' should be either of the following type: "
                            "'SimpleLabel', 'MulticlassLabel', 'MultiLabel', "
                            "'ContextualbanditLabel'.")  # fmt: skip
        if features is not None and not all(
                isinstance(f, Feature) for f in (features if isinstance(features, list)
                                                  else [features])):  # fmt: skip
            raise TypeError("Argument 'features' should be a Feature or a list of Feature.")
        if features is None and namespaces is None:
            raise ValueError("Missing 'features' or 'namespace' argument")
        if features is not None and namespaces is not None:
            raise ValueError("Arguments supplied for both 'features' and 'namespaces', only "
                             "one of the these arguments should be supplied.")  # fmt: skip
        if features is not None:
            namespaces = Namespace(features=features)
        self.namespaces = list(namespaces) if isinstance(namespaces, list | set) \
            else [namespaces]  # fmt: skip
        if not all(isinstance(ns, Namespace) for ns in self.namespaces):
            raise TypeError("Argument 'namespaces' should be a Namespace or a list of "
                            "Namespace.")  # fmt: skip
        self._check_columns()

    @classmethod
    def from_column_names(cls, *, y: Hashable | list | None = None, x: Hashable | list,
                          df: pd.DataFrame, label_type: str = "simple_label") -> DFtoVW:
        """Features ``x`` (columns, in VW's default namespace) and label ``y`` (a column;
        several for ``label_type="multi_label"``; none: no label)."""
        kinds = {"simple_label": SimpleLabel, "multiclass_label": MulticlassLabel,
                 "multi_label": MultiLabel}  # fmt: skip
        if label_type not in kinds:
            raise ValueError("'label_type' should be either of the following string: "
                             "'simple_label', 'multiclass_label', 'multi_label'")  # fmt: skip
        x = x if isinstance(x, list) else [x]
        namespaces = Namespace(features=[Feature(value=c) for c in x])
        if not y:
            return cls(namespaces=namespaces, label=None, df=df)
        y = y if isinstance(y, list) else [y]
        if label_type != "multi_label":
            if len(y) > 1:
                raise TypeError("When label_type is 'simple_label' or 'multiclass', argument "
                                "'y' should be a string (or any hashable type) or a list of "
                                "exactly one string (or any hashable type).")  # fmt: skip
            y = y[0]
        return cls(namespaces=namespaces, label=kinds[label_type](y), df=df)

    @classmethod
    def from_colnames(cls, y: Hashable | list, x: Hashable | list, df: pd.DataFrame,
                      label_type: str = "simple_label") -> DFtoVW:
        """VW's older spelling of :meth:`from_column_names` (deprecated there too)."""
        warnings.warn("DFtoVW.from_colnames is deprecated. Use DFtoVW.from_column_names "
                      "instead.", DeprecationWarning, stacklevel=2)  # fmt: skip
        return cls.from_column_names(y=y, x=x, df=df, label_type=label_type)

    def _check_columns(self) -> None:
        have = set(self.df.columns)
        missing: dict[str, list] = {}
        for what, part in ((type(self.label).__name__, self.label), ("tag", self.tag)):
            if part is not None and part.columns - have:
                name = "List[" + type(part[0]).__name__ + "]" if isinstance(part, _Labels) \
                    else what  # fmt: skip
                missing[name] = sorted(part.columns - have)
        features = set().union(*(f.columns for ns in self.namespaces for f in ns.features))
        if features - have:
            missing["Feature"] = sorted(features - have)
        if missing:
            raise ValueError(" ".join(f"In '{k}': column(s) {repr(v)[1:-1]} not found in "
                                      "dataframe." for k, v in missing.items()))  # fmt: skip
        for part in (self.tag, self.label):
            if part is not None:
                part.check(self.df)
        if self.label is not None:  # (as VW: the features' types are checked with a label)
            for ns in self.namespaces:
                for f in ns.features:
                    f.check(self.df)

    def convert_df(self) -> list[str]:
        """The rows as VW lines."""
        out = pd.Series([""] * self.n_rows, index=self.df.index, dtype=object)
        if self.label is not None:
            out = out + self.label.process(self.df) + " "
        if self.tag is not None:
            out = out + self.tag.process(self.df)
        last = len(self.namespaces) - 1
        for i, ns in enumerate(self.namespaces):
            part = pd.Series([ns.process()] * self.n_rows, index=self.df.index, dtype=object)
            for f in ns.features:
                part = part + " " + f.process(self.df)
            out = out + part + (" " if i < last else "")
        self.out = out
        return out.to_list()
