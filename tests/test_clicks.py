"""The click simulator against its closed forms, by Monte Carlo: the position-based model's event rates per rank
and grade, the cascade model's per-list click rates, trust bias per rank; which documents a session shows;
reproducibility and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from gaprank import GaprankInputError
from gaprank.clicks import (
    ClickCounts,
    ClickModel,
    click_training_set,
    em_propensities,
    estimate_propensities,
    inverse_propensities,
    simulate_clicks,
)
from gaprank.data import RankingSplit


def _split(grades: list[list[int]]) -> RankingSplit:
    """Queries of the given grades, each shown in this order (scores decreasing)."""
    labels = np.concatenate([np.asarray(g) for g in grades])
    qids = np.concatenate([np.full(len(g), str(q)) for q, g in enumerate(grades)])
    return RankingSplit(features=np.zeros((labels.size, 1)), labels=labels, qids=qids,
                        docids=np.array([f"d{i}" for i in range(labels.size)]))


def _scores(grades: list[list[int]]) -> np.ndarray:
    return np.concatenate([-np.arange(len(g), dtype=np.float64) for g in grades])


def _rate_matches(hits: np.ndarray, expected: float, what: str) -> None:
    """A Monte Carlo frequency within 5 standard errors of its closed form."""
    n = hits.size
    error = 5 * np.sqrt(max(expected * (1 - expected), 1e-12) / n) + 1e-12
    assert abs(hits.mean() - expected) <= error, f"{what}: {hits.mean():.5f} against {expected:.5f} (n {n})"


def test_position_based_events_have_their_closed_form_rates():
    grades = [[2, 0, 1, 2, 1, 0], [1, 2, 0, 0, 2, 1]]
    model = ClickModel(eta=1.5, epsilon_plus=0.9, epsilon_minus=0.05, cart=[0.0, 0.4, 0.7], purchase=[0.0, 0.3, 0.6])
    log = simulate_clicks(_split(grades), _scores(grades), 200_000, model, shown=6, seed=3)
    labels = _split(grades).labels[log.document]
    for rank in range(1, 7):
        theta = rank ** -1.5
        for grade in range(3):
            rows = (log.position == rank) & (labels == grade)
            if not rows.any():
                continue  # no list holds this grade at this rank
            click = 0.05 + 0.85 * (2 ** grade - 1) / 3
            cart, purchase = [0.0, 0.4, 0.7][grade], [0.0, 0.3, 0.6][grade]
            _rate_matches(log.event[rows] >= 1, theta * click, f"click, rank {rank}, grade {grade}")
            _rate_matches(log.event[rows] >= 2, theta * click * cart, f"cart, rank {rank}, grade {grade}")
            _rate_matches(log.event[rows] == 3, theta * click * cart * purchase, f"purchase, rank {rank}, grade {grade}")


def test_cascade_clicks_have_their_closed_form_rates_and_end_at_the_first_click():
    grades = [[1, 0, 2, 1, 0]]
    model = ClickModel(examination="cascade", epsilon_plus=0.8, epsilon_minus=0.1)
    log = simulate_clicks(_split(grades), _scores(grades), 100_000, model, shown=5, seed=4)
    click = [0.1 + 0.7 * (2 ** g - 1) / 3 for g in grades[0]]
    reached = 1.0
    for rank, probability in enumerate(click, start=1):
        _rate_matches(log.event[log.position == rank] >= 1, reached * probability, f"cascade click at rank {rank}")
        reached *= 1 - probability
    per_session = np.bincount(log.session, weights=(log.event >= 1).astype(float))
    assert per_session.max() == 1  # the first click ends the session


def test_trust_bias_takes_epsilons_per_rank():
    grades = [[2, 2, 2], [0, 0, 0]]
    plus, minus = [0.95, 0.7, 0.5], [0.3, 0.15, 0.05]
    log = simulate_clicks(_split(grades), _scores(grades), 100_000,
                          ClickModel(eta=0.0, epsilon_plus=plus, epsilon_minus=minus), shown=3, seed=5)
    top = _split(grades).labels[log.document] == 2
    for rank in (1, 2, 3):
        _rate_matches(log.event[(log.position == rank) & top] >= 1, plus[rank - 1], f"relevant at rank {rank}")
        _rate_matches(log.event[(log.position == rank) & ~top] >= 1, minus[rank - 1], f"not relevant at rank {rank}")


def test_a_session_shows_the_logger_s_top_documents_in_order():
    grades = [[0, 1, 2, 0], [2, 1], [1, 1, 1, 1, 1]]
    scores = np.array([0.1, 0.9, 0.5, 0.9, 1.0, 2.0, 3.0, 3.0, 1.0, 2.0, 0.0])  # ties kept in row order
    log = simulate_clicks(_split(grades), scores, 300, ClickModel(), shown=3, seed=6)
    expected = {0: [1, 3, 2], 1: [5, 4], 2: [6, 7, 9]}
    for session in range(log.num_sessions):
        rows = log.session == session
        assert log.document[rows].tolist() == expected[int(log.query[rows][0])]
        assert log.position[rows].tolist() == list(range(1, int(rows.sum()) + 1))
    assert set(log.query.tolist()) == {0, 1, 2}


def test_the_seed_fixes_the_log():
    grades = [[2, 0, 1], [1, 0]]
    first, again, other = (simulate_clicks(_split(grades), _scores(grades), 2000, seed=s) for s in (7, 7, 8))
    assert all(np.array_equal(getattr(first, c), getattr(again, c)) for c in ("session", "query", "document", "event"))
    assert not np.array_equal(first.event, other.event)


def test_a_log_s_sessions_between_and_its_events_reached_per_level():
    """sessions_between keeps the sessions' rows and numbers; reached counts each level's events and those above,
    against a loop over the rows."""
    grades = [[2, 0, 1], [1, 0]]
    split = _split(grades)
    log = simulate_clicks(split, _scores(grades), 300, ClickModel(eta=0.5), seed=3)
    part = log.sessions_between(100, 200)
    keep = (log.session >= 100) & (log.session < 200)
    for column in ("session", "query", "document", "position", "event"):
        np.testing.assert_array_equal(getattr(part, column), getattr(log, column)[keep])
    assert len(log.sessions_between(0, 300)) == len(log) and not len(log.sessions_between(300, 400))
    counts = log.count(len(split.labels), positions=3)
    rows = np.array([4, 0, 2])
    expected = np.zeros((3, 3, 3), dtype=np.int64)
    for document, position, event in zip(log.document, log.position, log.event, strict=True):
        for level in range(1, int(event) + 1):
            if document in rows:
                expected[np.flatnonzero(rows == document)[0], position - 1, level - 1] += 1
    assert expected.sum() > 0
    np.testing.assert_array_equal(counts.reached(rows), expected)


@pytest.mark.parametrize("call, message", [
    (lambda s, y: simulate_clicks(s, y, 0), "sessions must be a positive integer"),
    (lambda s, y: simulate_clicks(s, y[:-1], 10), "scores must be finite, one per row"),
    (lambda s, y: simulate_clicks(s, np.full(y.shape, np.nan), 10), "scores must be finite"),
    (lambda s, y: simulate_clicks(s, y, 10, shown=0), "shown must be a positive integer"),
    (lambda s, y: ClickModel(examination="random"), "examination must be"),
    (lambda s, y: ClickModel(eta=-1.0), "eta must be"),
    (lambda s, y: ClickModel(epsilon_plus=1.5), "epsilon_plus must be probabilities"),
    (lambda s, y: simulate_clicks(s, y, 10, ClickModel(cart=[0.1, 0.2])), "cart must give one probability, or one per grade"),
    (lambda s, y: simulate_clicks(s, y, 10, shown=2, randomise=3), "randomise must be an integer from 0 to shown"),
    (lambda s, y: estimate_propensities(simulate_clicks(s, y, 10), 4), "no session of the log shows all 4"),
    (lambda s, y: estimate_propensities(simulate_clicks(s, y, 10, ClickModel(epsilon_minus=0.0, epsilon_plus=0.0),
                                                        randomise=2), 2), "rank 1 got no click"),
    (lambda s, y: inverse_propensities(simulate_clicks(s, y, 10), [1.0, 0.0, 0.5]), "propensities must be a 1-D"),
    (lambda s, y: inverse_propensities(simulate_clicks(s, y, 10), [1.0, 1.5, 0.5]), "probabilities in \\(0, 1\\]"),
    (lambda s, y: inverse_propensities(simulate_clicks(s, y, 10), [1.0, np.nan, 0.5]), "propensities must be"),
    (lambda s, y: inverse_propensities(simulate_clicks(s, y, 10), [1.0, 0.5]), "shows rank 3, but propensities give"),
])
def test_bad_input_is_one_line(call, message):
    grades = [[2, 0, 1], [1, 0]]
    with pytest.raises(GaprankInputError, match=message) as caught:
        call(_split(grades), _scores(grades))
    assert "\n" not in str(caught.value)


def _written(tmp_path, lines: list[str]):
    path = tmp_path / "log.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _toy_split():
    split = _split([[2, 0, 1], [1, 0]])
    return RankingSplit(features=split.features, labels=split.labels, qids=split.qids,
                        docids=np.array(["a", "b", "c", "d", "e"]))


def test_a_log_written_and_read_back_is_the_same_log_and_counts_alike(tmp_path, monkeypatch):
    """Read in chunks of 7 rows (sessions across chunk boundaries): the log and its counts are the whole read's."""
    from gaprank.clicks import _files, count_clicks, read_click_log, write_click_log

    split = _toy_split()
    log = simulate_clicks(split, np.array([3.0, 2.0, 1.0, 2.0, 1.0]), 50, ClickModel(eta=0.5), shown=3, seed=9)
    write_click_log(tmp_path / "log.csv", log, split)
    monkeypatch.setattr(_files, "ROWS_PER_CHUNK", 7)
    back = read_click_log(tmp_path / "log.csv", split)
    for column in ("session", "query", "document", "position", "event"):
        assert np.array_equal(getattr(back, column), getattr(log, column)), column
    counted = count_clicks(tmp_path / "log.csv", split, positions=3)
    assert counted.sessions == 50 and np.array_equal(counted.counts, log.count(5, positions=3).counts)
    assert counted.shown.sum() == len(log) and counted.counts[:, :, 1:].sum() == int((log.event > 0).sum())
    with pytest.raises(_files.ClickLogError, match="position 3 is deeper than the 2 counted"):
        count_clicks(tmp_path / "log.csv", split, positions=2)


HEADER = "session,query,document,position,event"


@pytest.mark.parametrize("lines, message", [
    ([], "the log is empty"),
    (["session,query,doc,position,event"], "line 1: the header must be session,query,document,position,event"),
    ([HEADER], "the log has no rows"),
    ([HEADER, "s1,0,a,1"], "line 2: 4 fields"),
    ([HEADER, "s1,0,z,1,0"], "line 2: document 'z' of query '0' is not in the split"),
    ([HEADER, "s1,0,a,0,1"], "line 2: position must be an integer >= 1; got '0'"),
    ([HEADER, "s1,0,a,-1,1"], "line 2: position must be an integer >= 1"),
    ([HEADER, "s1,0,a,1,4"], r"line 2: event must be an integer grade 0..3; got '4'"),
    ([HEADER, "s1,0,a,1,1.5"], "line 2: event must be an integer grade"),
    ([HEADER, "s1,0,a,1,1", "s1,0,b,1,0"], "line 3: session 's1' shows position 1 twice"),
    ([HEADER, "s1,0,a,1,1", "s1,1,d,2,0"], "line 3: session 's1' holds more than one query"),
    ([HEADER, "s1,0,a,\u00b2,1"], "line 2: position must be an integer >= 1"),
    ([HEADER, "s1,0,a,1,\u00b9"], "line 2: event must be an integer grade"),
    ([HEADER, "s1,0,a,1,1", "s2,1,d,1,0", "s1,0,b,2,0"], "line 4: session 's1' appears again after other sessions"),
])
def test_a_bad_log_is_one_line_naming_the_file_and_line(tmp_path, lines, message):
    from gaprank.clicks import ClickLogError, count_clicks, read_click_log

    path = _written(tmp_path, lines) if lines else tmp_path / "empty.csv"
    if not lines:
        path.write_text("")
    for read in (read_click_log, count_clicks):
        with pytest.raises(ClickLogError, match=message) as caught:
            read(path, _toy_split())
        assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)


def test_a_session_repeating_a_position_across_a_chunk_boundary_is_refused(tmp_path, monkeypatch):
    from gaprank.clicks import ClickLogError, _files, read_click_log

    monkeypatch.setattr(_files, "ROWS_PER_CHUNK", 2)
    path = _written(tmp_path, [HEADER, "s1,0,a,1,0", "s1,0,b,2,0", "s1,0,c,1,0"])
    with pytest.raises(ClickLogError, match="line 4: session 's1' shows position 1 twice"):
        read_click_log(path, _toy_split())
    blank = _written(tmp_path, [HEADER, "s1,0,a,1,0", "", "s2,1,d,1,1", ""])  # blank lines are passed over
    assert read_click_log(blank, _toy_split()).num_sessions == 2


@pytest.mark.parametrize("top", [1, 2, 4])
def test_the_default_click_model_serves_any_grade_scale(top):
    """The default cart and purchase probabilities follow the split's own scale: binary labels and grades 0..4."""
    grades = [[top, 0, top - 1 if top > 1 else 0, 1], [0, top]]
    log = simulate_clicks(_split(grades), _scores(grades), 5000, ClickModel(eta=0.0, epsilon_minus=0.0), seed=2)
    labels = _split(grades).labels[log.document]
    assert (log.event[labels == 0] == 0).all()  # a grade-0 document never gets an event (epsilon- = 0)
    assert (log.event[labels == top] == 3).any() and log.event.max() == 3


def test_a_randomising_logger_shuffles_its_top_ranks_only_and_keeps_short_lists_whole():
    """Each of the top 3 documents is at each of ranks 1..3 a third of the time; ranks 4 and 5 keep the logger's
    documents; a two-document query shows both, at ranks 1 and 2."""
    grades = [[2, 0, 1, 2, 1], [1, 0]]
    split = _split(grades)
    log = simulate_clicks(split, _scores(grades), 30_000, randomise=3, shown=5, seed=5)
    long = log.query == 0
    for rank in range(1, 4):
        for row in range(3):
            _rate_matches(log.document[long & (log.position == rank)] == row, 1 / 3, f"row {row} at rank {rank}")
    for rank in (4, 5):
        assert (log.document[long & (log.position == rank)] == rank - 1).all()
    short = ~long
    assert set(log.position[short].tolist()) == {1, 2}
    assert set(log.document[short].tolist()) == {5, 6}


def test_propensities_estimated_from_randomised_top_ranks_recover_the_examination_curve():
    """Position-based model at eta 1.5 with noisy clicks; queries shorter than the randomised ranks (whose documents
    only reach the top ranks) are left out of the estimate. Each estimate within 5 standard errors of (1/p)^1.5."""
    rng = np.random.default_rng(11)
    grades = [list(rng.integers(0, 3, 6)) for _ in range(30)] + [[2, 2]] * 10
    model = ClickModel(eta=1.5, epsilon_minus=0.1)
    log = simulate_clicks(_split(grades), _scores([list(g) for g in grades]), 300_000, model, shown=6, randomise=5,
                          seed=6)
    estimate = estimate_propensities(log, 5)
    full = log.query < 30
    rate_1 = (log.event[full & (log.position == 1)] >= 1).mean()
    for rank in range(1, 6):
        truth = rank ** -1.5
        shown = int((full & (log.position == rank)).sum())
        error = 5 * np.sqrt(truth * rate_1 * (1 - truth * rate_1) / shown) / rate_1 * 1.5 + 1e-12
        assert abs(estimate[rank - 1] - truth) <= error, (rank, estimate[rank - 1], truth)
    weights = inverse_propensities(log, model.examined(6))
    np.testing.assert_allclose(weights, log.position.astype(float) ** 1.5, rtol=1e-15)


def test_a_click_training_set_averages_each_level_over_the_sessions_that_showed_the_document():
    """By hand: row 0 shown twice at position 1 (a click, a purchase) and once at position 2 (nothing); row 2 once at
    position 2 (a cart); row 1 never shown (left out); propensities 1 and 1/2."""
    split = _split([[2, 0, 1]])
    counts = np.zeros((3, 2, 4), dtype=np.int64)
    counts[0, 0, 1] = counts[0, 0, 3] = counts[0, 1, 0] = 1
    counts[2, 1, 2] = 1
    data = click_training_set(split, ClickCounts(counts, 3), [1.0, 0.5])
    np.testing.assert_array_equal(data.rows, [0, 2])
    np.testing.assert_array_equal(data.sessions, [3, 1])
    np.testing.assert_allclose(data.weights, [[2 / 3, 1 / 3, 1 / 3], [2.0, 2.0, 0.0]])
    np.testing.assert_array_equal(data.split.labels, [3, 2])
    np.testing.assert_array_equal(data.split.features, split.features[[0, 2]])
    per_level = click_training_set(split, ClickCounts(counts, 3), [[1.0, 1.0, 0.5], [0.5, 0.5, 0.25]])
    np.testing.assert_allclose(per_level.weights, [[2 / 3, 1 / 3, 2 / 3], [2.0, 2.0, 0.0]])


def test_a_click_training_set_s_weights_estimate_the_examined_event_rates():
    """Position-based model at eta 1: with the true propensities each shown document's weights approach its grade's
    click, cart and purchase rates of an examined user (5 standard errors); the naive rates (propensities 1) fall
    short by the examination probability of where it was shown."""
    grades = [[2, 0, 1, 2, 1]]
    model = ClickModel(eta=1.0, epsilon_minus=0.1, cart=[0.0, 0.4, 0.7], purchase=[0.0, 0.3, 0.6])
    split = _split(grades)
    log = simulate_clicks(split, _scores(grades), 200_000, model, shown=5, seed=9)
    counts = log.count(5, positions=5)
    ipw = click_training_set(split, counts, model.examined(5))
    naive = click_training_set(split, counts, np.ones(5))
    for row, grade in enumerate(grades[0]):
        click = 0.1 + 0.9 * (2 ** grade - 1) / 3
        rates = [click, click * [0.0, 0.4, 0.7][grade], click * [0.0, 0.4, 0.7][grade] * [0.0, 0.3, 0.6][grade]]
        theta = 1.0 / (row + 1)
        for level, rate in enumerate(rates):
            error = 5 * np.sqrt(max(rate * theta * (1 - rate * theta), 1e-12) / 200_000) / theta + 1e-12
            assert abs(ipw.weights[row, level] - rate) <= error, (row, level, ipw.weights[row, level], rate)
            assert naive.weights[row, level] == pytest.approx(ipw.weights[row, level] * theta, rel=1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda s, c: click_training_set(s, c, [1.0, 0.0, 1.0]), "propensities must be probabilities in \\(0, 1\\]"),
    (lambda s, c: click_training_set(s, c, [[1.0, 1.0]] * 3), "one per position and level 1..3"),
    (lambda s, c: click_training_set(s, c, [1.0]), "the counts show position 3, but propensities give positions 1..1"),
    (lambda s, c: click_training_set(_split([[1, 0]]), c, [1.0, 1.0, 1.0]), "the counts are of 5 rows; the split has 2"),
    (lambda s, c: click_training_set(s, ClickCounts(np.zeros((5, 3, 4), np.int64), 0), [1.0, 1.0, 1.0]),
     "an empty log"),
])
def test_a_bad_click_training_set_is_one_line(call, message):
    grades = [[2, 0, 1], [1, 0]]
    split = _split(grades)
    counts = simulate_clicks(split, _scores(grades), 50, shown=3).count(5, positions=3)
    with pytest.raises(GaprankInputError, match=message) as caught:
        call(split, counts)
    assert "\n" not in str(caught.value)


def test_a_parquet_log_reads_as_its_csv_twin_and_names_its_bad_rows(tmp_path, monkeypatch):
    """A log written as Parquet reads back, in chunks, as the same log with the same counts as its CSV twin; a bad
    row is named by its row (1-based); the columns are checked; a missing pyarrow names the extra."""
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from gaprank.clicks import _files, count_clicks, read_click_log, write_click_log

    split = _toy_split()
    log = simulate_clicks(split, np.array([3.0, 2.0, 1.0, 2.0, 1.0]), 40, ClickModel(eta=0.5), shown=3, seed=4)
    write_click_log(tmp_path / "log.parquet", log, split)
    write_click_log(tmp_path / "log.csv", log, split)
    monkeypatch.setattr(_files, "ROWS_PER_CHUNK", 5)
    back = read_click_log(tmp_path / "log.parquet", split)
    for column in ("session", "query", "document", "position", "event"):
        assert np.array_equal(getattr(back, column), getattr(log, column)), column
    assert np.array_equal(count_clicks(tmp_path / "log.parquet", split, positions=3).counts,
                          count_clicks(tmp_path / "log.csv", split, positions=3).counts)
    bad = pa.table({"session": [1, 1, 2], "query": ["0", "0", "1"], "document": ["a", "b", "d"],
                    "position": [1, 2, 0], "event": [1, 0, 0]})
    pq.write_table(bad, tmp_path / "bad.parquet")
    with pytest.raises(_files.ClickLogError, match=r"bad.parquet, row 3: position must be an integer >= 1; got '0'"):
        read_click_log(tmp_path / "bad.parquet", split)
    pq.write_table(bad.drop(["event"]), tmp_path / "columns.parquet")
    with pytest.raises(_files.ClickLogError, match="the columns must be session,query,document,position,event"):
        count_clicks(tmp_path / "columns.parquet", split)
    monkeypatch.setitem(__import__("sys").modules, "pyarrow.parquet", None)  # as if pyarrow were not installed
    with pytest.raises(ModuleNotFoundError, match=r'pip install "gaprank\[parquet\]"'):
        read_click_log(tmp_path / "log.parquet", split)


def test_a_log_in_several_files_reads_and_counts_as_one(tmp_path, monkeypatch):
    """Three files, read in chunks of 4 rows: the log, its counts and its sessions' ids are the one file's; a file
    may be CSV or Parquet."""
    pytest.importorskip("pyarrow")
    from gaprank.clicks import _files, count_clicks, read_click_log, write_click_log

    split = _toy_split()
    log = simulate_clicks(split, np.array([3.0, 2.0, 1.0, 2.0, 1.0]), 30, ClickModel(eta=0.5), shown=3, seed=2)
    files = [tmp_path / "a.csv", tmp_path / "b.parquet", tmp_path / "c.csv"]
    for path, (first, last) in zip(files, [(0, 11), (11, 12), (12, 30)], strict=True):
        write_click_log(path, log.sessions_between(first, last), split)
    monkeypatch.setattr(_files, "ROWS_PER_CHUNK", 4)
    back = read_click_log(files, split)
    for column in ("session", "query", "document", "position", "event"):
        assert np.array_equal(getattr(back, column), getattr(log, column)), column
    counted = count_clicks(files, split, positions=3)
    assert counted.sessions == 30 and np.array_equal(counted.counts, log.count(5, positions=3).counts)
    assert counted.session_ids.tolist() == sorted(str(s) for s in range(30))


@pytest.mark.parametrize("second, message", [
    (["1,0,b,1,0"], "b.csv, line 2: session '1' was already read from .*log.csv; a session's rows must be in one file"),
    (["3,1,d,1,0", "2,0,a,1,0"], "b.csv, line 3: session '2' was already read from .*log.csv"),
    ([], "b.csv: the log has no rows"),
])
def test_a_session_in_two_files_or_an_empty_file_is_refused_naming_the_line(tmp_path, monkeypatch, second, message):
    """A session that goes on in the next file, or comes back in a later one, is one error naming the later file
    and line, whatever the chunking; so is a file with no rows."""
    from gaprank.clicks import ClickLogError, _files, count_clicks, read_click_log

    a = _written(tmp_path, [HEADER, "2,0,a,1,1", "1,0,a,1,1", "1,0,c,2,0"])
    b = tmp_path / "b.csv"
    b.write_text("\n".join([HEADER, *second]) + "\n")
    for chunk in (1, 100):
        monkeypatch.setattr(_files, "ROWS_PER_CHUNK", chunk)
        for read in (read_click_log, count_clicks):
            with pytest.raises(ClickLogError, match=message) as caught:
                read([a, b], _toy_split())
            assert str(caught.value).startswith(str(b)) and "\n" not in str(caught.value)
    with pytest.raises(GaprankInputError, match="no click log files given"):
        count_clicks([], _toy_split())


def test_em_on_exact_expected_counts_returns_the_propensities_of_every_level():
    """Noiseless counts: every document shown 10^7 times at every position, its events at level a or above
    round(n theta_a(k) gamma_a(d)). The model holds exactly, so EM's fixed point is the truth (to the rounding)."""

    rng = np.random.default_rng(3)
    theta = np.stack([np.arange(1, 7) ** -1.0, np.arange(1, 7) ** -0.5], axis=1)  # [P, c]: clicks, then purchases
    gamma = np.sort(rng.uniform(0.05, 0.9, (40, 2)), axis=1)[:, ::-1]  # a purchase is rarer than a click
    n = 10_000_000
    reached = np.rint(n * theta[None] * gamma[:, None]).astype(np.int64)  # [d, P, c]: events >= a
    counts = np.zeros((40, 6, 3), dtype=np.int64)
    counts[..., 2] = reached[..., 1]
    counts[..., 1] = reached[..., 0] - reached[..., 1]
    counts[..., 0] = n - reached[..., 0]
    estimate = em_propensities(ClickCounts(counts, n * 6), iterations=5_000, tolerance=1e-12)
    np.testing.assert_allclose(estimate, theta, atol=1e-5)


def test_em_recovers_the_examination_curve_from_a_log_that_moves_documents_between_positions():
    """Monte Carlo: position-based model at eta 1 with noisy clicks, every session's top 6 shuffled. EM's estimate
    and the randomisation estimate agree with (1/p) and with each other within a few points."""

    rng = np.random.default_rng(5)
    grades = [list(rng.integers(0, 3, 6)) for _ in range(40)]
    split = _split(grades)
    log = simulate_clicks(split, _scores(grades), 200_000, ClickModel(eta=1.0, epsilon_minus=0.1), shown=6,
                          randomise=6, seed=2)
    estimate = em_propensities(log.count(len(split.labels), positions=6))
    assert estimate.shape == (6, 3)
    np.testing.assert_allclose(estimate[:, 0], 1 / np.arange(1, 7), atol=0.02)
    np.testing.assert_allclose(estimate[:, 0], estimate_propensities(log, 6), atol=0.02)


def test_regression_em_identifies_the_curve_through_features_where_plain_em_refuses():
    """A logger that puts each document at one fixed position, unrelated to its features: no document links two
    positions, so EM without features refuses; with features that carry the grade, regression EM recovers (1/p)
    within a few points."""
    pytest.importorskip("lightgbm")
    rng = np.random.default_rng(8)
    grades = [list(rng.integers(0, 3, 8)) for _ in range(300)]
    split = _split(grades)
    features = np.stack([split.labels + rng.normal(0, 0.1, split.labels.size), rng.normal(size=split.labels.size)], 1)
    split = RankingSplit(features=features, labels=split.labels, qids=split.qids, docids=split.docids)
    log = simulate_clicks(split, rng.random(split.labels.size), 100_000, ClickModel(eta=1.0), shown=5, seed=4)
    counts = log.count(len(split.labels), positions=5)
    with pytest.raises(GaprankInputError, match="no document links position 2 to position 1"):
        em_propensities(counts)
    estimate = em_propensities(counts, split.features, iterations=100)
    np.testing.assert_allclose(estimate[:, 0], 1 / np.arange(1, 6), atol=0.04)


@pytest.mark.parametrize("call, message", [
    (lambda c: em_propensities(ClickCounts(np.zeros((3, 2, 4), np.int64), 0)), "an empty log"),
    (lambda c: em_propensities(ClickCounts(c.counts * np.array([0, 1])[None, :, None], 2)),
     "no document was shown at position 1"),
    (lambda c: em_propensities(c, np.zeros((2, 1))), r"features must be \[rows, features\] with 3 rows"),
    (lambda c: em_propensities(c, iterations=0), "iterations must be a positive integer"),
    (lambda c: em_propensities(c, tolerance=-1.0), "tolerance must be a positive number"),
    (lambda c: em_propensities(c, tolerance=True), "tolerance must be a positive number"),
    (lambda c: em_propensities(ClickCounts(c.counts[..., :1], 2)), r"levels >= 2"),
    (lambda c: em_propensities(ClickCounts(c.counts[..., [0, 1, 3]], 2)), "no event of level 2 or above"),
])
def test_em_refuses_what_it_cannot_estimate(call, message):
    counts = np.zeros((3, 2, 4), dtype=np.int64)
    counts[0, 0] = [3, 1, 0, 0]
    counts[0, 1] = [2, 1, 0, 0]
    counts[1, 0] = [1, 0, 1, 0]
    with pytest.raises(GaprankInputError, match=message):
        call(ClickCounts(counts, 2))


def test_em_propensities_of_counts_wider_than_the_positions_shown_make_a_training_set():
    """A log showing 4 positions counted 10 deep: EM gives 4 positions, and click_training_set takes them (it reads
    the positions shown, not the counts' width)."""
    grades = [[2, 1, 0, 1, 0]] * 30
    split = _split(grades)
    log = simulate_clicks(split, _scores(grades), 20_000, ClickModel(eta=1.0), shown=4, randomise=4, seed=3)
    counts = log.count(len(split.labels), positions=10)
    theta = em_propensities(counts)
    assert theta.shape == (4, 3)
    data = click_training_set(split, counts, theta)
    np.testing.assert_array_equal(data.weights, click_training_set(split, log.count(len(split.labels), positions=4),
                                                                   theta).weights)
