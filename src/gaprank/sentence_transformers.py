"""GAP inside sentence-transformers' cross-encoder training: :class:`DeltaScheme`, a weighting scheme for its
``LambdaLoss`` whose pair weights are gaprank's exact swap deltas, and :class:`GradedRerankingEvaluator`, a
reranking evaluator for graded labels (sentence-transformers versions 5 and 6):

```python
from sentence_transformers.cross_encoder import CrossEncoderTrainer, losses
from gaprank.sentence_transformers import DeltaScheme, GradedRerankingEvaluator

loss = losses.LambdaLoss(model, weighting_scheme=DeltaScheme("gap", g=[0.5, 0.5]))
evaluator = GradedRerankingEvaluator(samples, g=[0.5, 0.5])  # GAP, xGAP, eGAP, NDCG@10, MAP, P@10, ERR
CrossEncoderTrainer(model=model, train_dataset=train, loss=loss, evaluator=evaluator).train()
```
"""

from __future__ import annotations

import csv
import logging
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ._extras import require
from ._inputs import MAX_GRADE, GaprankInputError, check_integer_grades
from ._typing import ArrayLike
from .boosting import RankingEval
from .losses import swap_deltas
from .metrics import objective_measure

require("sentence_transformers", "sentence-transformers", "gaprank.sentence_transformers")

try:  # sentence-transformers 6
    from sentence_transformers.base.evaluation.evaluator import BaseEvaluator
    from sentence_transformers.cross_encoder.losses.lambda_loss import BaseWeightingScheme
except ImportError:  # sentence-transformers 5
    import importlib

    from sentence_transformers.evaluation import SentenceEvaluator as BaseEvaluator  # type: ignore[no-redef]

    BaseWeightingScheme = importlib.import_module(  # type: ignore[misc]
        "sentence_transformers.cross_encoder.losses.LambdaLoss").BaseWeightingScheme

__all__ = ["DeltaScheme", "GradedRerankingEvaluator"]

logger = logging.getLogger(__name__)

DEFAULT_MEASURES = ("GAP", "xGAP", "eGAP", "NDCG@10", "MAP", "P@10", "ERR")


def _integer_grades(labels: torch.Tensor, what: str) -> torch.Tensor:
    """``labels`` as int64 grades; a non-integer or out-of-scale label is a one-line error."""
    return check_integer_grades(labels, f"{what} must be integer grades 0..{MAX_GRADE} (gaprank's measures are graded)")


class DeltaScheme(BaseWeightingScheme):
    r"""A weighting scheme for sentence-transformers' ``LambdaLoss``: the weight of the pair at predicted
    ranks (i, j) is :math:`|\Delta M_{ij}|`, the exact change of ``measure`` when the two documents swap.

    With it, ``LambdaLoss`` is LambdaRank for any gaprank measure with swap deltas: GAP, xGAP, eGAP, AP,
    nDCG (and @k), ERR, RBP, P@k, RR, ... (:func:`gaprank.metrics.objective_names`). The deltas are those of
    :func:`gaprank.swap_deltas` (docs: The maths), on the ranking the model's scores give.

    ``LambdaLoss`` calls the scheme as ``scheme(gain, discount, true_sorted)``, with ``true_sorted`` ``[B, N]``
    the labels in predicted order, padding read as 0 and sorted last; only ``true_sorted`` is read. Since
    padding reads as a grade-0 document, a measure whose deltas depend on how many documents a list has
    (``short_list="zero"``: a list shorter than k scores 0) is refused.

    Parameters
    ----------
    measure : str
        A measure string with swap deltas: ``"gap"``, ``"xgap"``, ``"egap"``, ``"ap"``, ``"ndcg"``,
        ``"nDCG@10"``, ``"ERR(max_grade=4)"``, ...
    g : sequence of float, optional
        GAP's, xGAP's and eGAP's user threshold probabilities g_1..g_c, the same as ``g`` in the string
        (give one of the two). Default: uniform over grades 1..c with
        c the largest label of each batch; pass ``g`` so every batch uses the same user model.

    Examples
    --------
    >>> import torch
    >>> from gaprank.sentence_transformers import DeltaScheme
    >>> scheme = DeltaScheme("gap", g=[0.5, 0.5])
    >>> weights = scheme(None, None, torch.tensor([[0.0, 2.0, 1.0]]))  # labels in predicted order
    >>> round(weights[0, 0, 1].item(), 4)  # swapping ranks 1 and 2: GAP 0.5556 -> 0.8889
    0.3333
    """

    def __init__(self, measure: str = "gap", g: ArrayLike | None = None) -> None:
        super().__init__()
        self.measure = objective_measure(measure).with_params(g=g)
        self.measure.settings()  # g checked now: taken by this measure, summing to 1
        self.g = None if g is None else [float(v) for v in torch.as_tensor(g, dtype=torch.float64).tolist()]
        self._refuse_length_dependence()

    def _refuse_length_dependence(self) -> None:
        """Padding reaches the scheme as trailing grade-0 documents: refuse a measure whose deltas between real
        documents change when such documents are appended. Probed on lists on both sides of the cutoff (k - 1,
        k and k + 1 documents, besides 2, 3 and 6), each padded beyond the cutoff, against the same list with
        the padding masked."""
        k = self.measure.k or 0
        for length in sorted({2, 3, 6, k - 1, k, k + 1}):
            if length < 2:
                continue  # a one-document list has no pair to weight
            width = max(length, k) + 2
            grades = torch.zeros(1, width, dtype=torch.int64)
            grades[0, :length] = torch.tensor([0 if i % 3 == 1 else 1 for i in range(length)])
            mask = torch.arange(width)[None, :] < length
            scores = -torch.arange(width, dtype=torch.float64)[None, :]
            padded = swap_deltas(scores, grades, measure=self.measure) * (mask[:, :, None] & mask[:, None, :])
            masked = swap_deltas(scores, grades, measure=self.measure, mask=mask)
            if not torch.allclose(padded, masked, rtol=0, atol=1e-12):
                raise GaprankInputError(f"measure {self.measure.name!r}: its swap deltas depend on the number of documents "
                                        f"in a list ({length} documents padded to {width} change them), which LambdaLoss "
                                        "does not pass to its weighting scheme (padding reads as grade 0); choose a "
                                        "measure without that dependence")

    def forward(self, gain: Any, discount: Any, true_sorted: torch.Tensor) -> torch.Tensor:
        """``[B, N, N]``: |ΔM| of swapping the documents at predicted ranks i and j."""
        if not isinstance(true_sorted, torch.Tensor) or true_sorted.ndim != 2:
            raise GaprankInputError("true_sorted must be a [batch, list] tensor; got "
                                    f"{getattr(true_sorted, 'shape', true_sorted)!r}")
        grades = _integer_grades(true_sorted.detach(), "labels")
        positions = torch.arange(grades.shape[1], device=grades.device, dtype=torch.float64)
        scores = (-positions).expand(grades.shape)  # already in predicted order
        deltas = swap_deltas(scores, grades, measure=self.measure)
        dtype = gain.dtype if isinstance(gain, torch.Tensor) else torch.float32
        return deltas.abs().to(dtype)

    def extra_repr(self) -> str:
        g = self.measure.kwargs.get("g")
        return f"measure={self.measure.name!r}" + (f", g={list(g)}" if g is not None else "")


class GradedRerankingEvaluator(BaseEvaluator):
    """Evaluate a CrossEncoder's reranking of graded lists with gaprank's measures: GAP, xGAP, eGAP,
    NDCG@10, MAP, P@10, ERR by default.

    Each sample is a query with its documents and their graded labels; the model scores every (query,
    document) pair in one ``predict`` call, and each list is ranked by those scores (ties in document order).
    Each measure string means what it means everywhere in gaprank (``"NDCG@10"``: gain 2^grade - 1, discount
    1/log2(r+1); the recall base is the sample's documents); ``conventions="trec"`` reads the strings as
    trec_eval and sentence-transformers' own evaluators do (nDCG's gain the grade). Results are returned, logged
    and written to a CSV file, and stored in the model card, as sentence-transformers' own evaluators do.

    Parameters
    ----------
    samples : sequence of dict
        ``{"query": str, "documents": [str, ...], "labels": [int, ...]}`` each (the ``LambdaLoss`` data layout,
        with ``"docs"`` accepted for ``"documents"``); labels are integer grades.
    measures : sequence of str
        gaprank measure strings; the first is the primary metric.
    g : sequence of float, optional
        GAP's, xGAP's and eGAP's user model (default uniform over the grades 1..c of all samples).
    conventions : {"trec", "letor3", "letor4"}, optional
        Named rules for the settings a measure string leaves open (:class:`gaprank.boosting.RankingEval`); the
        metric keys stay the strings as given. Default none.
    name : str
        Prefixed to the metric keys and the CSV file name.
    batch_size : int
        ``predict``'s batch size.
    show_progress_bar : bool
    write_csv : bool
    prompt_name : str, optional
        Passed to ``predict`` (sentence-transformers 5.1 and later).

    Examples
    --------
    >>> from gaprank.sentence_transformers import GradedRerankingEvaluator
    >>> evaluator = GradedRerankingEvaluator([{"query": "q", "documents": ["a", "b"], "labels": [2, 0]}])
    >>> evaluator.primary_metric
    'gap'
    """

    def __init__(self, samples: Sequence[dict[str, Any]], measures: Sequence[str] = DEFAULT_MEASURES, *,
                 g: ArrayLike | None = None, conventions: str | None = None, name: str = "", batch_size: int = 64,
                 show_progress_bar: bool = False, write_csv: bool = True, prompt_name: str | None = None) -> None:
        super().__init__()
        self.queries, self.documents, self.labels = self._read_samples(samples)
        self.scorer = RankingEval(list(measures), g=g, conventions=conventions)
        self.measures = list(measures)
        self.g = None if g is None else [float(v) for v in np.asarray(g, dtype=np.float64).reshape(-1)]
        self.name = name
        self.batch_size = batch_size
        self.show_progress_bar = show_progress_bar
        self.write_csv = write_csv
        self.prompt_name = prompt_name
        self.keys = [measure.lower() for measure in self.measures]
        self.primary_metric = self.keys[0]
        self.csv_file = "GradedRerankingEvaluator" + (f"_{name}" if name else "") + "_results.csv"
        self.csv_headers = ["epoch", "steps", *self.keys]

    @staticmethod
    def _read_samples(samples: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]], list[np.ndarray]]:
        if isinstance(samples, dict) or not len(samples):
            raise GaprankInputError("samples must be a non-empty list of {'query', 'documents', 'labels'} dicts")
        queries, documents, labels = [], [], []
        for i, sample in enumerate(samples):
            docs = sample.get("documents", sample.get("docs")) if isinstance(sample, dict) else None
            if docs is None or "query" not in sample or "labels" not in sample:
                raise GaprankInputError(f"samples[{i}] must be a dict with 'query', 'documents' and 'labels'; got "
                                        f"{sorted(sample) if isinstance(sample, dict) else type(sample).__name__}")
            if len(docs) != len(sample["labels"]) or not len(docs):
                raise GaprankInputError(f"samples[{i}]: {len(docs)} documents and {len(sample['labels'])} labels; "
                                        "give one label per document, at least one document")
            grades = _integer_grades(torch.as_tensor(np.asarray(sample["labels"], dtype=np.float64)),
                                     f"samples[{i}]['labels']")
            queries.append(sample["query"])
            documents.append(list(docs))
            labels.append(grades.numpy())
        return queries, documents, labels

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1) -> dict[str, float]:
        where = "" if epoch == -1 else (f" after epoch {epoch}" if steps == -1 else f" in epoch {epoch} after {steps} steps")
        logger.info(f"GradedRerankingEvaluator: evaluating the model on the {self.name} dataset{where}:")
        pairs = [[query, doc] for query, docs in zip(self.queries, self.documents, strict=True) for doc in docs]
        prompt = {} if self.prompt_name is None else {"prompt_name": self.prompt_name}  # version 5.0 has no prompts
        scores = np.asarray(model.predict(pairs, batch_size=self.batch_size, convert_to_numpy=True,
                                          show_progress_bar=self.show_progress_bar, **prompt), dtype=np.float64).reshape(-1)
        sizes = np.fromiter(map(len, self.documents), dtype=np.int64, count=len(self.documents))
        values = self.scorer.evaluate(scores, np.concatenate(self.labels), sizes)
        metrics = {key: float(values[measure]) for key, measure in zip(self.keys, self.measures, strict=True)}
        logger.info(f"Queries: {len(self.queries)}  Documents: {int(sizes.sum())}")
        for measure, key in zip(self.measures, self.keys, strict=True):
            logger.info(f"{measure + ':':<12}{metrics[key] * 100:.2f}")
        if output_path is not None and self.write_csv:
            os.makedirs(output_path, exist_ok=True)
            path = os.path.join(output_path, self.csv_file)
            exists = os.path.isfile(path)
            with open(path, newline="", mode="a" if exists else "w", encoding="utf-8") as out:
                writer = csv.writer(out)
                if not exists:
                    writer.writerow(self.csv_headers)
                writer.writerow([epoch, steps, *(metrics[key] for key in self.keys)])
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics

    def get_config_dict(self) -> dict[str, Any]:
        return {"measures": self.measures, **({"g": self.g} if self.g is not None else {})}
