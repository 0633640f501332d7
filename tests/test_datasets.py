"""Generators in skstoch.datasets."""
import numpy as np
import pytest

from skstoch.datasets import make_embedding, make_semisupervised, make_triplets


def _truth(triplets, emb):
    i, j, k = triplets.T
    return (np.sum((emb[i] - emb[j]) ** 2, 1) < np.sum((emb[i] - emb[k]) ** 2, 1))


def test_make_embedding_matches_paper_scale():
    emb = make_embedding(2000, 10, random_state=0)
    assert emb.shape == (2000, 10)
    d2 = np.sum((emb[:1000] - emb[1000:]) ** 2, axis=1)
    assert d2.mean() == pytest.approx(1.0, rel=0.05)  # paper 000: E d^2 = 1


def test_noise_free_triplets_are_all_correct_in_every_format():
    triplets, emb = make_triplets(30, 500, 3, return_embedding=True, random_state=0)
    assert triplets.shape == (500, 3) and np.all(_truth(triplets, emb))
    assert np.all((triplets[:, 0] != triplets[:, 1]) & (triplets[:, 0] != triplets[:, 2])
                  & (triplets[:, 1] != triplets[:, 2]))
    raw, y = make_triplets(30, 500, 3, embedding=emb, response="boolean", random_state=0)
    np.testing.assert_array_equal(y, _truth(raw, emb))
    raw, y = make_triplets(30, 500, 3, embedding=emb, response="count", random_state=0)
    np.testing.assert_array_equal(y, np.where(_truth(raw, emb), 1, -1))


def test_flip_noise_rate():
    triplets, emb = make_triplets(50, 20_000, 2, noise=0.1, return_embedding=True, random_state=1)
    assert 1 - _truth(triplets, emb).mean() == pytest.approx(0.1, abs=0.01)


def test_triplet_argument_errors():
    with pytest.raises(ValueError, match="n_objects"):
        make_triplets(2, 10)
    with pytest.raises(ValueError, match="response"):
        make_triplets(10, 10, response="tensor")
    with pytest.raises(ValueError, match="noise_kind"):
        make_triplets(10, 10, noise_kind="uniform")


def test_make_semisupervised_marks_unlabeled_and_keeps_every_class():
    y = np.repeat(np.array(["a", "b", "c"]), [50, 30, 20])
    y_semi, mask = make_semisupervised(y, n_labeled=10, random_state=0)
    assert set(y_semi[mask]) == {"a", "b", "c"}
    assert np.all(y_semi[~mask] == -1) and np.all(y_semi[mask] == y[mask])
    assert 8 <= mask.sum() <= 12
    y_num = np.repeat([0, 1], 50)
    y_semi, mask = make_semisupervised(y_num, labeled_fraction=0.2, random_state=0)
    assert mask.sum() == 20 and np.all(y_semi[~mask] == -1)
    with pytest.raises(ValueError, match="exactly one"):
        make_semisupervised(y_num)
    with pytest.raises(ValueError, match="already contains -1"):
        make_semisupervised(np.array([-1, 0, 1]), n_labeled=2)


@pytest.mark.parametrize("call, match", [
    # ZeroDivisionError / numpy's 'negative dimensions' / TypeError before
    (lambda: make_embedding(5, 0), "n_components"),
    (lambda: make_embedding(-1, 2), "n_objects"),
    (lambda: make_embedding(2.5, 2), "n_objects"),
    (lambda: make_triplets(-5, 5), "n_objects"),
    (lambda: make_triplets(10, 5, 0), "n_components"),
    (lambda: make_triplets(10, 50, 2, noise="a"), "noise"),
    (lambda: make_triplets(embedding=np.zeros(10), n_triplets=5), "embedding"),
    (lambda: make_triplets(embedding=np.zeros((10, 2, 2)), n_triplets=5), "embedding"),
    (lambda: make_semisupervised(3, n_labeled=1), "y"),
    (lambda: make_semisupervised(np.arange(10) % 2, labeled_fraction="a"), "labeled_fraction"),
    # MemoryError (14.6 TiB, 72.8 TiB, 21.8 TiB asked of numpy) before
    (lambda: make_embedding(10**12, 2), "n_objects"),
    (lambda: make_triplets(10**12, 5), "n_objects"),
    (lambda: make_triplets(10, 10**12), "n_triplets"),
])
def test_bad_sizes_and_types_raise_value_errors_naming_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("kwargs, match", [
    # silent before: NaN noise answered every gaussian triplet wrongly and flipped none
    # with 'flip'; noise > 1 or < 0 flipped all or none; NaN points gave arbitrary answers
    (dict(noise=np.nan), "noise"),
    (dict(noise=np.nan, noise_kind="gaussian"), "noise"),
    (dict(noise=1.5), "noise"),
    (dict(noise=-0.5), "noise"),
    (dict(noise=np.inf, noise_kind="gaussian"), "noise"),
    (dict(embedding=np.full((10, 2), np.nan)), "embedding"),
])
def test_triplet_noise_and_embedding_must_be_meaningful(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_triplets(10, 50, 2, random_state=0, **kwargs)


def test_embedding_scale_must_be_a_finite_nonnegative_number():
    for scale in (np.nan, -1.0, np.inf):     # NaN gave a NaN embedding silently
        with pytest.raises(ValueError, match="scale"):
            make_embedding(5, 2, scale=scale)


def test_make_semisupervised_without_stratification():
    # the range check once read `not a <= n <= b if stratify else 1 <= n <= b`: every valid
    # n_labeled raised without stratification, and too large ones reached numpy's error
    y = np.array([0, 1] * 10)
    for n_labeled in (1, 5, 20):
        y_semi, mask = make_semisupervised(y, n_labeled=n_labeled, stratify=False,
                                           random_state=0)
        assert mask.sum() == n_labeled
        np.testing.assert_array_equal(y_semi[mask], y[mask])
        assert np.all(y_semi[~mask] == -1)
    y_semi, mask = make_semisupervised(y, labeled_fraction=0.5, stratify=False,
                                       random_state=0)
    assert mask.sum() == 10
    with pytest.raises(ValueError, match="n_labeled=21 is more than the 20 rows"):
        make_semisupervised(y, n_labeled=21, stratify=False)
    with pytest.raises(ValueError, match="n_labeled=1 is fewer than the 2 classes"):
        make_semisupervised(y, n_labeled=1)


def test_make_semisupervised_keeps_minus_one_distinct_from_the_labels():
    """Silent before: a bool y stored -1 as True, a uint8 y raised OverflowError, a '-1'
    string label made the output hold both '-1' and -1, NaN labels and an (n, 1) y passed."""
    y_bool = np.arange(40) % 2 == 0
    y_semi, mask = make_semisupervised(y_bool, n_labeled=6, random_state=0)
    assert np.all(y_semi[~mask] == -1) and all(v is not True for v in y_semi[~mask])
    assert set(y_semi[mask]) == {True, False}
    y_semi, mask = make_semisupervised((np.arange(40) % 2).astype(np.uint8), n_labeled=6,
                                       random_state=0)
    assert np.all(y_semi[~mask] == -1) and set(y_semi[mask]) == {0, 1}
    with pytest.raises(ValueError, match="'-1'"):
        make_semisupervised(np.array(["-1", "a", "b"] * 5), n_labeled=5)
    with pytest.raises(ValueError, match="NaN"):
        make_semisupervised(np.r_[np.arange(10) % 2, np.nan], n_labeled=4)
    with pytest.raises(ValueError, match="1-D"):
        make_semisupervised((np.arange(10) % 2)[:, None], n_labeled=4)


@pytest.mark.parametrize("sizes", [(50, 50), (90, 5, 5), (34, 33, 33), (1, 1, 98)])
def test_stratified_labeling_keeps_exactly_n_labeled_rows(sizes):
    # rounded per-class shares can add up to more (50/50 with 3 labels: 2 + 2) or fewer
    y = np.repeat(np.arange(len(sizes)), sizes)
    for n_labeled in range(len(sizes), y.size + 1):
        y_semi, mask = make_semisupervised(y, n_labeled=n_labeled, random_state=n_labeled)
        assert mask.sum() == n_labeled == np.sum(y_semi != -1)
        kept = np.bincount(y[mask], minlength=len(sizes))
        assert kept.min() >= 1
        # in proportion: a larger class never keeps fewer rows than a smaller one
        larger = np.greater.outer(sizes, sizes)
        assert not np.any(larger & np.less.outer(kept, kept))


@pytest.mark.parametrize("func", [make_embedding, make_triplets, make_semisupervised])
def test_public_generators_document_every_parameter_and_cite_papers_by_name(func):
    """The API page renders these docstrings: every argument is described, and papers are
    cited by authors and venue, not by the repository's internal numbering ("paper 000")."""
    import inspect
    import re

    docscrape = pytest.importorskip("numpydoc.docscrape")
    documented = set()
    for param in docscrape.FunctionDoc(func)["Parameters"]:
        documented.update(part.strip() for part in param.name.split(","))
    assert set(inspect.signature(func).parameters) <= documented
    assert not re.search(r"paper \d{3}", func.__doc__)
