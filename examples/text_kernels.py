"""Word-position text kernels for disambiguation: context-sensitive spelling ("among" or "between"?).

User guide: docs/text.md. English side (King James Version) of the bundled chapters, a few seconds:

    python examples/text_kernels.py

Every occurrence of "among" or "between" is an example; its context (5 tokens each side, the word itself left out)
must tell which of the two stands there. Chapters are the unit of the split (no chapter in both train and test).
"""

import numpy as np

from iokr import ContextFeaturizer, ContextRLSClassifier
from iokr.datasets import load_parallel_text
from iokr.metrics import auc
from iokr.text import BagOfWordsKernel, CooccurrenceLSA, TransformedContextKernel, WordPositionKernel, tokenize

ids, english, _ = load_parallel_text()
texts = [tokenize(chapter) for chapter in english]
pair = ("among", "between")
occurrences = [(k, i, t) for k, tokens in enumerate(texts) for i, t in enumerate(tokens) if t in pair]
chapter = np.array([k for k, _, _ in occurrences])
y = np.array([t == pair[1] for _, _, t in occurrences], dtype=int)
rng = np.random.default_rng(0)
test_chapters = rng.choice(len(texts), size=len(texts) // 3, replace=False)
is_test = np.isin(chapter, test_chapters)
print(f"{len(y)} occurrences ({y.sum()} '{pair[1]}'), {is_test.sum()} in the test chapters")

window = 5
featurizer = ContextFeaturizer(window=window, min_count=2).fit(texts)  # vocabulary: no labels used
X = featurizer.transform([(texts[k], i) for k, i, _ in occurrences])  # sparse word-position matrices

# Word vectors from unlabeled text (the target words removed), for the word transformation of the framework.
unlabeled = [[t if t not in pair else "<unk>" for t in tokens] for tokens in texts]
lsa = CooccurrenceLSA(n_components=50).fit(unlabeled, featurizer.vocabulary_)

kernels = {
    "bag of words": (BagOfWordsKernel(window), None),
    "word-position kernel": (WordPositionKernel(window), {"theta": [0.25, 1.0]}),
    "positional + word transformation": (TransformedContextKernel(window, word_embedding=lsa.embedding_),
                                         {"theta": [0.1, 0.3, 1.0], "word_mix": [0.0, 0.3]}),
}
for name, (kernel, grid) in kernels.items():
    # alpha and the kernel parameters by 5-fold closed-form CV on the training chapters (grouped by chapter).
    model = ContextRLSClassifier(kernel, param_grid=grid, cv=5).fit(X[~is_test], y[~is_test], groups=chapter[~is_test])
    accuracy = np.mean(model.predict(X[is_test]) == y[is_test])
    print(f"{name:34s} test accuracy {accuracy:.3f}, AUC {auc(y[is_test], model.decision_function(X[is_test])):.3f}"
          f"  (alpha {model.alpha_:g}, {model.kernel_.get_params().get('theta', '-')})")
