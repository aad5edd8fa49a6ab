"""Multiclass labels (--oaa K): which labels are classes, on VW and svmlight lines."""

from __future__ import annotations

import numpy as np

from streamlearn.io import REASONS, parse_bytes
from streamlearn.io.classes import CLASS_WITH_BASE, NOT_A_CLASS, check_classes
from streamlearn.io.names import class_slots, slot_names


def test_classes_zero_to_k_and_unlabeled_are_kept():
    """0..K: the classes are 0..K-1 or 1..K, as --indexing or the first learned label 0
    or K says (streamlearn.learners.oaa.decided)."""
    text = (b"1 |f a\n3 2 'tag |f a\n2.0 |f a\n+2 |f a\n|f a\n'only_tag |f a\n0 |f a\n4 |f a\n"
            b"1.5 |f a\n-1 |f a\n2 1 0.5 |f a\nx |f a\n")  # fmt: skip
    batch = parse_bytes(text)
    assert check_classes(batch, 3) == 4  # (x is already a bad label)
    want = [0, 0, 0, 0, 0, 0, 0, NOT_A_CLASS, NOT_A_CLASS, NOT_A_CLASS, CLASS_WITH_BASE, 1]
    assert batch.status.tolist() == want
    assert batch.weights[1] == 2.0 and np.isnan(batch.labels[4])
    assert "integer 0..K" in REASONS[NOT_A_CLASS] and "base" in REASONS[CLASS_WITH_BASE]


def test_svmlight_labels_are_classes_too():
    batch = parse_bytes(b"3 1:0.5 7:1\n4 2:1\n", fmt="svmlight")
    check_classes(batch, 3)
    assert batch.status.tolist() == [0, NOT_A_CLASS]


def test_names_of_class_slots_follow_vws_layout():
    """Class c of feature slot h at (h*s + c) mod 2^b: slot 57421 at -b 18 with --oaa 3 is
    class 1 of feature slot 14355 (and of the three others 2^16 apart), named as VW's
    --invert_hash names it."""
    hs, c = class_slots(57421, 18, 3)
    assert c == 1 and hs == [14355, 14355 + 65536, 14355 + 2 * 65536, 14355 + 3 * 65536]
    names = {14355: ["f^a"], 14355 + 65536: ["g^z"]}
    assert slot_names(names, 57421, 18, 3) == ["f^a[1]", "g^z[1]"]
    assert slot_names(names, 57420, 18, 3) == ["f^a", "g^z"]
    assert slot_names(names, 14355, 18) == ["f^a"]


def test_vw_reads_a_label_above_k_as_no_class():
    """``sl vw``: an integer above K is a label of no class (VW learns -1 for every class
    from it), -1 no label; a fraction is still no label VW's reader takes."""
    batch = parse_bytes(b"4 |f a\n7 |f a\n-1 |f a\n1.5 |f a\n")
    assert check_classes(batch, 3, vw=True) == 1
    assert batch.status.tolist() == [0, 0, 0, NOT_A_CLASS]
    assert np.isnan(batch.labels[2])
