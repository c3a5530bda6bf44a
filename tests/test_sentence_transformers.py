"""gaprank.sentence_transformers: DeltaScheme's weights are the exact swap deltas (brute force over the
oracles; LambdaRankScheme's own weights for nDCG), LambdaLoss with it trains a tiny cross-encoder built offline,
and GradedRerankingEvaluator reports gaprank's values (and sentence-transformers' own on binary labels)."""

from __future__ import annotations

import csv
import os

import numpy as np
import oracles as O
import pytest
import torch

pytest.importorskip("sentence_transformers")

from sentence_transformers.cross_encoder import CrossEncoder, losses  # noqa: E402

import gaprank  # noqa: E402
from gaprank import GaprankInputError  # noqa: E402
from gaprank.sentence_transformers import DeltaScheme, GradedRerankingEvaluator  # noqa: E402

WORDS = "what is the capital of france italy paris rome bear panda fish a are kind city river big small".split()


def _tiny_cross_encoder(path, initializer_range):
    """A randomly initialised one-layer BERT cross-encoder with a vocabulary written here: nothing downloaded."""
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    (path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    BertTokenizer(str(path / "vocab.txt")).save_pretrained(str(path))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(WORDS) + 5, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, num_labels=1, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0,  # no dropout: the loss before and after is deterministic
                        initializer_range=initializer_range)
    BertForSequenceClassification(config).save_pretrained(str(path))
    return str(path)


@pytest.fixture(scope="module")
def untrained_model_path(tmp_path_factory):
    """Transformers' usual initialisation: every document scores about the same."""
    return _tiny_cross_encoder(tmp_path_factory.mktemp("untrained_cross_encoder"), 0.02)


@pytest.fixture(scope="module")
def tiny_model_path(tmp_path_factory):
    """Weights spread enough that float32 scores do not tie."""
    return _tiny_cross_encoder(tmp_path_factory.mktemp("tiny_cross_encoder"), 1.0)


def _oracle(metric, grades, g):
    counts = np.bincount(grades, minlength=3)
    return {"gap": lambda: O.gap(grades, counts, g), "xgap": lambda: O.xgap(grades, counts, g),
            "egap": lambda: O.egap(grades, counts, g), "ap": lambda: O.ap(grades, counts),
            "ndcg": lambda: O.ndcg(grades, counts), "nDCG@3": lambda: O.ndcg(grades, counts, k=3)}[metric]() or 0.0


@pytest.mark.parametrize("metric", ["gap", "xgap", "egap", "ap", "ndcg", "nDCG@3"])
def test_weights_are_the_metric_change_after_each_swap(metric):
    """The weight of ranks (i, j) equals |M(after swapping them) - M| recomputed by the oracle, padding (read as
    trailing zeros, as LambdaLoss passes it) changing nothing."""
    rng = np.random.default_rng(1)
    g = [0.3, 0.7] if metric in ("gap", "xgap", "egap") else None
    lengths = [7, 5, 6]
    true_sorted = torch.zeros(len(lengths), 7)
    for b, n in enumerate(lengths):
        true_sorted[b, :n] = torch.tensor(rng.integers(0, 3, n), dtype=torch.float32)
    weights = DeltaScheme(metric, g=g)(torch.zeros(3, 7), None, true_sorted)
    assert weights.shape == (3, 7, 7) and weights.dtype == torch.float32
    for b, n in enumerate(lengths):
        grades = true_sorted[b, :n].long().tolist()
        base = _oracle(metric, grades, g)
        for i in range(n):
            for j in range(n):
                swapped = list(grades)
                swapped[i], swapped[j] = swapped[j], swapped[i]
                expected = abs(_oracle(metric, swapped, g) - base)
                assert weights[b, i, j].item() == pytest.approx(expected, abs=1e-6), (b, i, j)
    assert weights.abs().sum() > 0


def test_ndcg_weights_equal_lambdaloss_s_own_lambdarank_scheme():
    """For nDCG over the whole list, |ΔnDCG| is what LambdaRankScheme computes from LambdaLoss's gains and
    discounts: equal on every pair LambdaLoss keeps (different labels)."""
    rng = np.random.default_rng(2)
    true_sorted = torch.tensor(rng.integers(0, 4, (4, 9)), dtype=torch.float32)
    discount = torch.log2(1.0 + torch.arange(1, 10).float())[None, :]
    ideal = torch.sort(true_sorted, descending=True).values
    max_dcg = ((torch.pow(2, ideal) - 1) / discount).sum(-1).clamp(min=1e-10)
    gain = (torch.pow(2, true_sorted) - 1) / max_dcg[:, None]
    theirs = losses.LambdaRankScheme()(gain, discount, true_sorted)
    ours = DeltaScheme("ndcg")(gain, discount, true_sorted)
    kept = (true_sorted[:, :, None] - true_sorted[:, None, :]) != 0
    torch.testing.assert_close(ours[kept], theirs[kept], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("make, message", [
    (lambda: DeltaScheme("banana"), "^measure: unknown measure 'banana'"),
    (lambda: DeltaScheme("ndcg", g=[0.5, 0.5]), "^g applies to gap, xgap, egap"),
    (lambda: DeltaScheme("gap", g=[0.5, 0.6]), "g must sum to 1"),
    (lambda: DeltaScheme("nDCG(short_list=zero)@5"), "depend on the number of documents in a list"),
    (lambda: DeltaScheme("gap")(None, None, torch.tensor([[1.0, 0.5, 0.0]])), r"^labels must be integer grades 0..30 .*got 0.5$"),
    (lambda: DeltaScheme("gap", g=[0.5, 0.5])(None, None, torch.tensor([[3.0, 0.0]])), "label 3 is above the grade scale"),
])
def test_bad_settings_and_labels_are_one_line(make, message):
    with pytest.raises(GaprankInputError, match=message) as caught:
        make()
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("metric, refused", [
    ("nDCG(short_list=zero)@1", False), ("nDCG(short_list=zero)@2", False), ("nDCG(short_list=zero)@3", True),
    ("nDCG(short_list=zero)@10", True), ("P(short_list=zero)@3", False),
    ("nDCG@3", False),
])
def test_a_cutoff_measure_is_refused_exactly_when_padding_changes_its_weights(metric, refused):
    """A measure whose deltas between real documents change when a list is padded (short_list="zero": a list
    shorter than k scores 0) is refused, whatever k is; an accepted one weights every real pair of a padded list
    of any length 1..k+3 as swap_deltas does on the list alone. nDCG@1 and @2 are accepted rightly (a list
    shorter than k then has at most one document, no pair), and so is P@k (a swap inside a list shorter than k
    stays inside the top k)."""
    if refused:
        with pytest.raises(GaprankInputError, match="depend on the number of documents in a list"):
            DeltaScheme(metric)
        return
    scheme = DeltaScheme(metric)
    k = int(metric.rsplit("@", 1)[1])
    width = k + 6
    for length in range(1, k + 4):
        true_sorted = torch.zeros(1, width)
        true_sorted[0, :length] = torch.tensor([(2, 0, 1)[i % 3] for i in range(length)], dtype=torch.float32)
        mask = torch.arange(width)[None, :] < length
        expected = gaprank.swap_deltas(-torch.arange(width, dtype=torch.float64)[None, :], true_sorted.long(),
                                       measure=metric, mask=mask).abs()
        real = mask[:, :, None] & mask[:, None, :]
        weights = scheme(None, None, true_sorted)
        torch.testing.assert_close(weights[real].double(), expected[real], rtol=0, atol=1e-6)


def _toy_set(rng, queries=12):
    """Lists whose grade a word decides: 'paris' 2, 'rome' 1, others 0."""
    rows = []
    for _ in range(queries):
        docs, labels = [], []
        for _ in range(int(rng.integers(3, 7))):
            word = rng.choice(["paris", "rome", "bear", "fish", "river"])
            docs.append(f"the {word} is a {rng.choice(['big', 'small'])} city")
            labels.append({"paris": 2, "rome": 1}.get(word, 0))
        rows.append({"query": "what is the capital of france", "docs": docs, "labels": labels})
    return rows


def test_lambdaloss_with_the_scheme_trains_a_tiny_cross_encoder(untrained_model_path, tmp_path):
    """CrossEncoderTrainer with LambdaLoss(DeltaScheme("gap", g=[0.5, 0.5])): a few steps lower the loss and raise
    GAP on the training lists; a non-integer label is a one-line error from inside the loss."""
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments

    torch.manual_seed(0)
    model = CrossEncoder(untrained_model_path, local_files_only=True)
    rows = _toy_set(np.random.default_rng(0))
    loss = losses.LambdaLoss(model, weighting_scheme=DeltaScheme("gap", g=[0.5, 0.5]))
    inputs = ([r["query"] for r in rows], [r["docs"] for r in rows])
    labels = [torch.tensor(r["labels"], dtype=torch.float32) for r in rows]
    evaluator = GradedRerankingEvaluator(rows, ["GAP"], g=[0.5, 0.5])
    with torch.no_grad():
        before, gap_before = loss(inputs, labels).item(), evaluator(model)["gap"]
    args = CrossEncoderTrainingArguments(output_dir=str(tmp_path / "out"), num_train_epochs=10, per_device_train_batch_size=4,
                                         learning_rate=1e-2, save_strategy="no", report_to=[], logging_strategy="no",
                                         seed=0, use_cpu=True, disable_tqdm=True)
    data = Dataset.from_dict({"query": [r["query"] for r in rows], "docs": [r["docs"] for r in rows],
                              "labels": [r["labels"] for r in rows]})
    CrossEncoderTrainer(model=model, args=args, train_dataset=data, loss=loss).train()
    model.eval()
    with torch.no_grad():
        after, gap_after = loss(inputs, labels).item(), evaluator(model)["gap"]
    assert after < 0.5 * before and gap_after > gap_before + 0.2
    with pytest.raises(GaprankInputError, match="labels must be integer grades"):
        loss(inputs, [lab + 0.5 for lab in labels])


def test_evaluator_reports_gaprank_values_and_writes_like_sentence_transformers(tiny_model_path, tmp_path):
    model = CrossEncoder(tiny_model_path, local_files_only=True)
    rows = _toy_set(np.random.default_rng(3), queries=8)
    evaluator = GradedRerankingEvaluator(rows, g=[0.5, 0.5], name="toy")
    results = evaluator(model, output_path=str(tmp_path), epoch=1, steps=5)
    assert list(results) == ["toy_gap", "toy_xgap", "toy_egap", "toy_ndcg@10", "toy_map", "toy_p@10", "toy_err"]
    assert evaluator.primary_metric == "toy_gap"
    scores = [model.predict([[r["query"], d] for d in r["docs"]]) for r in rows]
    for key, function, kwargs in [("toy_gap", gaprank.gap, {"g": [0.5, 0.5]}), ("toy_egap", gaprank.egap, {"g": [0.5, 0.5]}),
                                  ("toy_ndcg@10", gaprank.ndcg, {"k": 10}),
                                  ("toy_err", gaprank.err, {"max_grade": 2})]:
        expected = np.mean([function(s, np.array(r["labels"]), **kwargs) for s, r in zip(scores, rows, strict=True)])
        assert results[key] == pytest.approx(expected, abs=1e-6), key
    with open(tmp_path / "GradedRerankingEvaluator_toy_results.csv", encoding="utf-8") as f:
        table = list(csv.reader(f))
    assert table[0] == ["epoch", "steps", "gap", "xgap", "egap", "ndcg@10", "map", "p@10", "err"]
    assert table[1][:2] == ["1", "5"] and float(table[1][2]) == pytest.approx(results["toy_gap"])


def test_evaluator_equals_sentence_transformers_own_on_binary_labels(tiny_model_path):
    from sentence_transformers.cross_encoder.evaluation import CrossEncoderRerankingEvaluator

    model = CrossEncoder(tiny_model_path, local_files_only=True)
    rng = np.random.default_rng(4)
    samples, graded = [], []
    for _ in range(10):
        words = [f"the {w} is a city" if i % 2 else f"a {w} river" for i, w in enumerate(rng.choice(WORDS, 8))]
        words = list(dict.fromkeys(words))
        positive = words[: int(rng.integers(1, 3))]
        samples.append({"query": "what is the capital of italy", "positive": positive, "negative": words[len(positive):]})
        graded.append({"query": "what is the capital of italy", "documents": words, "labels": [1] * len(positive) +
                       [0] * (len(words) - len(positive))})
    for sample in graded:  # tie-free scores: sklearn's AP averages over ties, gaprank keeps document order
        scores = model.predict([[sample["query"], d] for d in sample["documents"]])
        assert len(set(scores.tolist())) == len(scores)
    theirs = CrossEncoderRerankingEvaluator(samples, at_k=10)(model)
    ours = GradedRerankingEvaluator(graded, ["MAP", "MRR@10", "NDCG@10"])(model)
    assert ours["map"] == pytest.approx(theirs["map"], abs=1e-6)
    assert ours["mrr@10"] == pytest.approx(theirs["mrr@10"], abs=1e-6)
    assert ours["ndcg@10"] == pytest.approx(theirs["ndcg@10"], abs=1e-6)


@pytest.mark.parametrize("samples, message", [
    ([], "non-empty list"),
    ([{"query": "q", "labels": [1]}], r"^samples\[0\] must be a dict with 'query', 'documents' and 'labels'"),
    ([{"query": "q", "documents": ["a", "b"], "labels": [1]}], r"^samples\[0\]: 2 documents and 1 labels"),
    ([{"query": "q", "documents": ["a", "b"], "labels": [1, 0.5]}], r"^samples\[0\]\['labels'\] must be integer grades"),
])
def test_evaluator_refuses_bad_samples_in_one_line(samples, message):
    with pytest.raises(GaprankInputError, match=message):
        GradedRerankingEvaluator(samples)


def test_offline():
    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # tests/conftest.py: nothing is fetched from the Hub
