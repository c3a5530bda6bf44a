"""Bad input gets a clear error, never a silent wrong number."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
import torch

import gaprank.metrics as M
from gaprank import GaprankInputError
from gaprank.data import DataNotFoundError, LetorFormatError, load_fold, read_letor

S = np.array([[0.3, 0.2, 0.1]])
Y = np.array([[1, 0, 2]])
ALL = [
    (M.gap, {}), (M.xgap, {}), (M.egap, {}), (M.average_precision, {}), (M.generalized_ap, {}),
    (M.ndcg, {}), (M.precision, {"k": 2}), (M.q_measure, {}), (M.sliding_ratio, {}), (M.rbp, {}),
    (M.err, {}), (M.erap, {"p": [0, 0.5, 1]}), (M.errbp, {"p": [0, 0.5, 1]}),
    (M.reciprocal_rank, {}), (M.recall, {"k": 2}), (M.r_precision, {}), (M.success, {"k": 2}), (M.dcg, {}),
]
IDS = [fn.__name__ for fn, _ in ALL]


def test_every_registered_measure_is_fed_garbage_here():
    assert {fn for fn, _ in ALL} == {info.function for info in M.measures()}


@pytest.mark.parametrize("fn, kw", ALL, ids=IDS)
@pytest.mark.parametrize(
    "scores, labels, message",
    [
        ([[0.3, np.nan, 0.1]], Y, "NaN or infinite"),
        ([[0.3, np.inf, 0.1]], Y, "NaN or infinite"),
        (S, [[1, -1, 2]], "non-negative"),
        (S, [[1.5, 0, 2]], "integer grades"),
        (S, [[1, 0]], "does not match"),
        (np.zeros((1, 0)), np.zeros((1, 0), int), "empty"),
        (np.zeros((0, 3)), np.zeros((0, 3), int), "empty"),
        (np.zeros((2, 2, 2)), np.zeros((2, 2, 2), int), "1-D"),
        ([["a", "b", "c"]], Y, "numeric"),
    ],
)
def test_every_metric_rejects_bad_arrays(fn, kw, scores, labels, message):
    with pytest.raises(GaprankInputError, match=message):
        fn(np.asarray(scores), np.asarray(labels), **kw)


@pytest.mark.parametrize("fn, kw", ALL, ids=IDS)
def test_every_metric_rejects_bad_common_keywords(fn, kw):
    with pytest.raises(GaprankInputError, match="mask must be boolean"):
        fn(S, Y, mask=np.ones((1, 3), int), **kw)
    with pytest.raises(GaprankInputError, match="mask shape"):
        fn(S, Y, mask=np.ones((1, 2), bool), **kw)
    with pytest.raises(GaprankInputError, match="ties"):
        fn(S, Y, ties="random", **kw)
    with pytest.raises(GaprankInputError, match="reduction"):
        fn(S, Y, reduction="max", **kw)
    with pytest.raises(GaprankInputError, match="grade_counts"):
        fn(S, Y, grade_counts=[1, 0, 0], **kw)  # fewer grade-1/2 documents than the list holds
    with pytest.raises(GaprankInputError, match="grade_counts"):
        fn(S, Y, grade_counts=[[1, 1, 1, 1, 1]], **kw) if "p" in kw else fn(S, Y, grade_counts=[[1, -1, 1]], **kw)


def test_padding_is_never_read():
    scores = np.array([[0.3, np.nan, 0.1]])
    labels = np.array([[1, -5, 2]])
    mask = np.array([[True, False, True]])
    assert M.gap(scores, labels, mask=mask) == pytest.approx(M.gap(np.array([0.3, 0.1]), np.array([1, 2])))


@pytest.mark.parametrize("fn", [M.gap, M.xgap, M.egap])
def test_g_validation(fn):
    with pytest.raises(GaprankInputError, match="sum to 1"):
        fn(S, Y, g=[0.5, 0.6])
    with pytest.raises(GaprankInputError, match="non-negative"):
        fn(S, Y, g=[1.5, -0.5])
    with pytest.raises(GaprankInputError, match="above the grade scale"):
        fn(S, Y, g=[1.0])  # label 2 but g covers grade 1 only
    with pytest.raises(GaprankInputError, match="1-D"):
        fn(S, Y, g=[[0.5, 0.5]])
    with pytest.raises(GaprankInputError, match="grade_counts"):
        fn(S, Y, g=[0.5, 0.5], grade_counts=[1, 1, 1, 1])  # c from g (2) != from grade_counts (3)
    assert fn(S, Y, g=torch.tensor([0.5, 0.5])) == pytest.approx(fn(S, Y, g=np.array([0.5, 0.5])))
    assert fn(S, Y, g=[0.5, 0.5 + 5e-7]) == pytest.approx(fn(S, Y, g=[0.5, 0.5]), rel=1e-5)  # within 1e-6


def test_other_parameters_are_validated():
    with pytest.raises(GaprankInputError, match="probabilities in"):
        M.erap(S, Y, p=[0, 0.5, 1.5])
    with pytest.raises(GaprankInputError, match="above the grade scale"):
        M.errbp(S, Y, p=[0, 1])
    with pytest.raises(GaprankInputError, match="persistence"):
        M.rbp(S, Y, persistence=1.0)
    with pytest.raises(GaprankInputError, match="positive integer"):
        M.ndcg(S, Y, k=0)
    with pytest.raises(GaprankInputError, match="positive integer"):
        M.precision(S, Y, k=None)
    with pytest.raises(GaprankInputError, match="threshold"):
        M.average_precision(S, Y, threshold=0)
    with pytest.raises(GaprankInputError, match="gain"):
        M.ndcg(S, Y, gain="exp3")
    with pytest.raises(GaprankInputError, match="discount"):
        M.ndcg(S, Y, discount="log10")
    with pytest.raises(GaprankInputError, match="short_list"):
        M.precision(S, Y, k=2, short_list="drop")
    with pytest.raises(GaprankInputError, match="beta"):
        M.q_measure(S, Y, beta=-1)
    with pytest.raises(GaprankInputError, match="max_grade"):
        M.err(S, Y, max_grade=1)
    with pytest.raises(GaprankInputError, match="conventions"):
        M.evaluate_letor([1.0], [1], [1], conventions="letor5")
    with pytest.raises(GaprankInputError, match="group_sizes"):
        M.evaluate_letor([1.0, 2.0], [1, 0], [3])


def test_documented_rules_for_degenerate_queries():
    # no relevant document: empty_value; fully padded query: empty_value; one document: defined
    scores = np.array([[0.2, 0.1], [0.5, 0.4], [0.9, 0.0]])
    labels = np.array([[0, 0], [1, 0], [2, 0]])
    mask = np.array([[True, True], [False, False], [True, False]])
    out = M.gap(scores, labels, mask=mask, empty_value=-1.0, reduction="none")
    np.testing.assert_allclose(out, [-1.0, -1.0, 1.0])
    assert M.precision(scores, labels, k=1, mask=mask, empty_value=-1.0, reduction="none").tolist() == [0.0, 0.0, 1.0]
    assert np.isnan(M.ndcg(scores[:1], labels[:1], empty_value=float("nan")))


def _write(tmp_path, text, name="f.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, message",
    [
        ("1 qid:1 1:0.5 2:0.1\nx qid:1 1:0.5 2:0.1\n", "line 2: label 'x'"),
        ("1 qid:1 1:0.5 2:0.1\n-1 qid:1 1:0.5 2:0.1\n", "line 2: label '-1'"),
        ("1.5 qid:1 1:0.5 2:0.1\n", "line 1: label '1.5'"),
        ("1 1:0.5 2:0.1\n", "line 1: missing 'qid"),
        ("1 qid: 1:0.5 2:0.1\n", "line 1: missing 'qid"),
        ("1 qid:1 1:0.5 2:0.1\n0 qid:2 1:0.5 2:0.1\n0 qid:1 1:0.5 2:0.1\n", "line 3: rows of query 1 are not contiguous"),
        ("1 qid:1 1:0.5 2:0.1\n0 qid:1 1:0.5\n", "line 2: 1 features"),
        ("1 qid:1 1:0.5 2:0.1\n0 qid:1 2:0.5 1:0.1\n", "line 2: feature ids must be"),
        ("1 qid:1 1:0.5 2:abc\n", "feature value 'abc'"),
        ("1 qid:1 1:0.5 2\n", "malformed feature '2'"),
        ("1 qid:1 1:0.5 2:0.1\n\n0 qid:1 1:0.5 2:0.1\n", "line 2: empty line"),
        ("", "no data lines"),
        ("1 qid:1 1:0.5 2:nan\n", "line 1: feature value 'nan' \\(feature 2\\) is not finite"),
        ("1 qid:1 1:-inf 2:0.1\n", "line 1: feature value '-inf' \\(feature 1\\) is not finite"),
        ("1 qid:1 1:1_000 2:0.1\n", "line 1: feature value '1_000' \\(feature 1\\) is not a number"),
        ("1 qid:1 1:\u0661 2:0.1\n", "line 1: feature value '\u0661' \\(feature 1\\) is not a number"),
        ("\u0661 qid:1 1:0.5 2:0.1\n", "line 1: label '\u0661' is not a non-negative integer"),
        ("1 qid:1 1:0.5\n12345678901234567890 qid:1 1:0.5\n", "line 2: label 12345678901234567890 is above 30"),
        ("31 qid:1 1:0.5\n", "line 1: label 31 is above 30"),
        ("1 qid:1 1:0.5 2:1e999\n", "data line 1: a feature value overflows"),
    ],
)
def test_malformed_letor_lines_name_file_and_line(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(LetorFormatError, match=message) as exc:
        read_letor(path)
    assert str(path) in str(exc.value)


def test_letor_reader_accepts_crlf_gzip_and_null(tmp_path):
    text = "2 qid:7 1:0.5 2:NULL #docid = A\r\n0 qid:7 1:0.1 2:-3.0 #docid = B\r\n1 qid:8 1:0.2 2:NULL #docid = C\r\n"
    path = tmp_path / "f.txt.gz"
    with gzip.open(path, "wt", newline="") as fh:
        fh.write(text)
    split = read_letor(path)
    assert split.docids.tolist() == ["A", "B", "C"] and split.query_ids == ["7", "8"]
    np.testing.assert_allclose(split.features[:, 1], [-3.0, -3.0, 0.0])  # min(0, query min); all-NULL -> 0
    assert np.isnan(read_letor(path, null="nan").features[0, 1])
    assert read_letor(path, null="zero").features[0, 1] == 0.0
    with pytest.raises(LetorFormatError, match="NULL"):
        read_letor(path, null="error")
    with pytest.raises(LetorFormatError, match="expected 5"):
        read_letor(path, num_features=5)


def test_missing_data_is_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(DataNotFoundError, match="data_dir .*nowhere is not a directory"):
        load_fold("OHSUMED", 1, data_dir=tmp_path / "nowhere")
    monkeypatch.setenv("GAPRANK_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(DataNotFoundError, match="GAPRANK_DATA=.*nowhere is not a directory"):
        load_fold("OHSUMED", 1)
    monkeypatch.setenv("GAPRANK_DATA", str(tmp_path))
    with pytest.raises(DataNotFoundError) as missing:
        load_fold("MQ2007", 1)
    message = str(missing.value)
    assert "\n" not in message and len(message) < 600
    assert message.startswith("data set MQ2007 not found; looked in: GAPRANK_DATA ")
    assert "the user data directory" in message and "the sets bundled with gaprank" in message
    assert "letor-learning-rank" in message and "gaprank data import MQ2007 PATH" in message
    assert "MQ2007/Fold1..Fold5/{train,vali,test}.txt" in message
    assert "istella" not in message.lower() and "mslr" not in message.lower()  # that set's page only
    with pytest.raises(GaprankInputError, match="fold must be"):
        load_fold("OHSUMED", 6)


# --- hardening: numbers in files are finite ASCII numbers, grades stay on a bounded scale ---


def test_literal_nan_is_refused_even_where_null_is_filled(tmp_path):
    path = _write(tmp_path, "1 qid:1 1:0.5 2:NULL\n0 qid:1 1:nan 2:0.1\n")
    with pytest.raises(LetorFormatError, match="line 2: feature value 'nan'"):
        read_letor(path, null="min")
    with pytest.raises(LetorFormatError, match="line 1: feature 2 is NULL"):
        read_letor(path, null="error")


def test_a_huge_feature_id_costs_no_memory_and_is_refused_beyond_num_features(tmp_path):
    path = _write(tmp_path, "1 qid:1 1:0.5 1000000000:0.25\n0 qid:1 1:0.1 1000000000:0.75\n")
    split = read_letor(path)  # columns are the ids used, not 1..max id
    assert split.features.shape == (2, 2) and split.features[:, 1].tolist() == [0.25, 0.75]
    with pytest.raises(LetorFormatError, match="line 1: feature id 1000000000 is above num_features=2"):
        read_letor(path, num_features=2)


def test_comment_lines_trailing_blank_lines_and_line_numbers(tmp_path):
    text = "# exported by a tool\n1 qid:1 1:0.5 2:0.1 # docid = A\n   # a note\n0 qid:1 1:0.2 2:0.3\n\n\n  \n"
    split = read_letor(_write(tmp_path, text))
    assert split.labels.tolist() == [1, 0] and split.docids.tolist() == ["A", ""]
    # a form feed or U+2028 inside a line separates tokens but starts no new line
    text = "1 qid:1 1:0.5\x0c2:0.1\n0 qid:1 1:0.2\u20282:0.3\n0 qid:1 1:x 2:0.3\n"
    with pytest.raises(LetorFormatError, match="line 3: feature value 'x'"):
        read_letor(_write(tmp_path, text, "g.txt"))


@pytest.mark.parametrize("token", ["1_000", "\u0661", "0x10", "1,5"])
def test_prediction_scores_are_ascii_numbers(tmp_path, token):
    from gaprank.data import read_scores

    with pytest.raises(LetorFormatError, match="line 2: expected one number"):
        read_scores(_write(tmp_path, f"0.5\n{token}\n"))
    assert read_scores(_write(tmp_path, "0.5\n-1e3\n+.25\n", "ok.txt")).tolist() == [0.5, -1000.0, 0.25]


@pytest.mark.parametrize("fn, kw", ALL, ids=IDS)
def test_grades_above_the_scale_are_refused_before_any_allocation(fn, kw):
    # a label of 5000 once allocated gigabytes (tables one column per grade); now it is refused at once
    with pytest.raises(GaprankInputError, match="label 5000 is above 30"):
        fn(np.array([[0.3, 0.2, 0.1]]), np.array([[5000, 0, 1]]), **kw)
    with pytest.raises(GaprankInputError, match="label 1e\\+20 is above 30"):
        fn(np.array([[0.3, 0.2, 0.1]]), np.array([[1e20, 0, 1]]), **kw)
    if "p" not in kw:  # eRAP / eRRBP: p fixes the scale at 0..2
        assert np.isfinite(fn(np.array([[0.3, 0.2, 0.1]]), np.array([[30, 0, 1]]), **kw))


def test_a_parameter_cannot_set_a_grade_scale_above_the_cap():
    with pytest.raises(GaprankInputError, match="grade_counts sets a grade scale 0..40"):
        M.gap(S, Y, grade_counts=np.ones(41))
    with pytest.raises(GaprankInputError, match="sets a grade scale 0..31"):
        M.gap(S, Y, g=np.full(31, 1 / 31))


def test_ndcg_gain_of_a_large_label_is_refused_not_nan():
    # 2^1024 - 1 overflows float64: the label is refused instead of returning NaN
    with pytest.raises(GaprankInputError, match="label 1024 is above 30"):
        M.ndcg(S, [[1024, 0, 1]])
    assert np.isfinite(M.ndcg(S, [[30, 0, 1]]))


def test_trec_qrels_grade_is_bounded_with_file_and_line(tmp_path):
    from gaprank.data import read_qrels, read_run

    path = _write(tmp_path, "1 0 A 2\n1 0 B 20000000\n", "qrels")
    with pytest.raises(LetorFormatError, match="line 2: grade 20000000 is above 30"):
        read_qrels(path)
    with pytest.raises(LetorFormatError, match="line 1: grade '1_0' is not an integer"):
        read_qrels(_write(tmp_path, "1 0 A 1_0\n", "q2"))
    with pytest.raises(LetorFormatError, match="line 1: score '1_000' is not a number"):
        read_run(_write(tmp_path, "1 Q0 A 1 1_000 t\n", "run"))


def test_json_results_never_hold_nan(tmp_path):
    from gaprank.data import to_json, write_json_atomic

    with pytest.raises(GaprankInputError, match="non-finite number \\(at mean.NDCG@10\\)"):
        write_json_atomic(tmp_path / "s.json", {"mean": {"MAP": 0.5, "NDCG@10": float("nan")}})
    assert not (tmp_path / "s.json").exists()
    assert to_json({"a": [1.0, 2]}, indent=None) == '{"a": [1.0, 2]}'


def test_atomic_writes_follow_the_umask_like_any_file(tmp_path):
    import os

    from gaprank.data import write_atomic

    previous = os.umask(0o022)
    try:
        target = write_atomic(tmp_path / "out.txt", "x\n")
    finally:
        os.umask(previous)
    assert target.stat().st_mode & 0o777 == 0o644 and target.read_text() == "x\n"


def test_a_file_of_labels_and_query_ids_only_is_a_format_error(tmp_path):
    for name, text in (("plain.txt", "1 qid:1\n0 qid:1\n"), ("commented.txt", "1 qid:1 # a\n0 qid:1 # b\n")):
        (tmp_path / name).write_text(text)
        with pytest.raises(LetorFormatError, match=f"{name}, line 1: no features"):
            read_letor(tmp_path / name)


def test_a_byte_order_mark_and_cr_only_line_ends_read_like_lf(tmp_path):
    from gaprank.data import read_qrels

    plain = "1 qid:1 1:0.5 2:0.1\n0 qid:1 1:0.2 2:0.3\n2 qid:4 1:0.9 2:0.0\n"
    expected = read_letor(_write_text(tmp_path / "plain.txt", plain))
    for name, text in (("bom.txt", "\ufeff" + plain), ("cr.txt", plain.replace("\n", "\r")),
                       ("bom_crlf.txt", "\ufeff" + plain.replace("\n", "\r\n"))):
        split = read_letor(_write_text(tmp_path / name, text))
        assert split.query_ids == expected.query_ids and split.labels.tolist() == expected.labels.tolist()
        np.testing.assert_array_equal(split.features, expected.features)
    qrels = "1 0 d1 2\n1 0 d2 1\n"
    for name, text in (("q_bom.txt", "\ufeff" + qrels), ("q_cr.txt", qrels.replace("\n", "\r"))):
        assert read_qrels(_write_text(tmp_path / name, text)) == {"1": {"d1": 2, "d2": 1}}
    with pytest.raises(LetorFormatError, match=r"cr_bad.txt, line 2: .*label"):  # line numbers count CR lines
        read_letor(_write_text(tmp_path / "cr_bad.txt", plain.replace("\n", "\r").replace("0 qid:1", "x qid:1")))


def _write_text(path, text):
    path.write_bytes(text.encode("utf-8"))
    return path
