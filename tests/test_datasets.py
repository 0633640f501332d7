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
