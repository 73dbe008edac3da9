"""scansnap.lm: our layer is torch's TransformerEncoderLayer, the model returns causal maps, Z-attention, SGD."""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import names
from torch import nn

from scansnap import lm


def _pair(dtype: torch.dtype = torch.float64) -> tuple[lm.EncoderLayer, nn.TransformerEncoderLayer]:
    torch.manual_seed(0)
    ours = lm.EncoderLayer(16, 24, 0.1)
    torch.manual_seed(0)
    theirs = nn.TransformerEncoderLayer(16, 1, 24, 0.1, batch_first=True)
    return ours.to(dtype).eval(), theirs.to(dtype).eval()


def test_layer_is_torchs_encoder_layer_with_the_same_weights() -> None:
    ours, theirs = _pair()
    assert ours.state_dict().keys() == theirs.state_dict().keys()
    for (name, a), b in zip(ours.state_dict().items(), theirs.state_dict().values(), strict=True):
        assert torch.equal(a, b), name  # same initialization, draw for draw
    x = torch.randn(3, 9, 16, dtype=torch.float64)
    mask = nn.Transformer.generate_square_subsequent_mask(9, dtype=torch.float64)
    want = theirs(x, src_mask=mask, is_causal=True)
    for need_weights in (False, True):
        got, attn = ours(x, need_weights)
        assert (got - want).abs().max() < 1e-12
    assert torch.allclose(attn.sum(-1), torch.ones(3, 9, dtype=torch.float64))
    assert (attn.triu(1) == 0).all()  # causal: no weight on later positions


def test_layer_matches_torch_to_1e_6_in_float32() -> None:
    ours, theirs = _pair(torch.float32)
    x = torch.randn(4, 35, 16)
    mask = nn.Transformer.generate_square_subsequent_mask(35)
    assert (ours(x)[0] - theirs(x, src_mask=mask, is_causal=True)).abs().max() < 1e-6


def test_model_equals_its_torch_reference_and_returns_every_layers_maps() -> None:
    torch.manual_seed(1)
    model = lm.TransformerLM(50, d=16, d_hid=8, layers=3, max_len=12).double().eval()
    ref = lm.reference(model).double().eval()
    x = torch.randint(0, 50, (2, 12))
    logits, maps = model(x, need_weights=True)
    assert logits.shape == (2, 12, 50) and len(maps) == 3 and maps[0].shape == (2, 12, 12)
    assert (logits - ref(x)[0]).abs().max() < 1e-12
    assert torch.allclose(model.first_attention(x), maps[0])


def test_attention_of_a_1_layer_model_without_positions_is_softmax_of_z() -> None:
    torch.manual_seed(2)
    model = lm.TransformerLM(30, d=8, d_hid=8, positional=False, max_len=10)
    with torch.no_grad():
        model.layers[0].self_attn.in_proj_bias.normal_()  # the biases must enter Z correctly
    assert lm.z_error(model, torch.randint(0, 30, (5, 10))) < 1e-12
    with pytest.raises(ValueError, match=names("model")):
        lm.z_matrix(lm.TransformerLM(30, d=8, max_len=10))


def test_positional_encoding_is_the_tutorials() -> None:
    pe = lm.sinusoidal(5, 4)
    assert torch.allclose(pe[3], torch.tensor([torch.sin(torch.tensor(3.0)), torch.cos(torch.tensor(3.0)),
                                               torch.sin(torch.tensor(0.03)), torch.cos(torch.tensor(0.03))]))


def test_sgd_step_clips_and_is_deterministic() -> None:
    def run() -> tuple[float, list[torch.Tensor]]:
        torch.manual_seed(3)
        model = lm.TransformerLM(40, d=8, d_hid=8, max_len=6)
        before = [p.detach().clone() for p in model.parameters()]
        x, y = torch.randint(0, 40, (4, 6)), torch.randint(0, 40, (4, 6))
        loss = lm.sgd_step(model, x, y, lr=2.0, clip=0.5)
        moved = torch.sqrt(sum(((p - b) ** 2).sum() for p, b in zip(model.parameters(), before, strict=True)))
        assert moved <= 2.0 * 0.5 * (1 + 1e-5)  # a step is at most lr * clip long
        return loss, [p.detach() for p in model.parameters()]

    (l1, p1), (l2, p2) = run(), run()
    assert l1 == l2 and all(torch.equal(a, b) for a, b in zip(p1, p2, strict=True))


def test_sgd_step_trains_the_feed_forward_at_its_own_rate() -> None:
    """The authors' Figure 7 notebook: lr on every parameter, ff_lr on linear1/linear2 (clipping is shared)."""
    torch.manual_seed(0)
    model = lm.TransformerLM(12, d=8, d_hid=6, layers=2, dropout=0.0)
    x, y = torch.randint(0, 12, (3, 5)), torch.randint(0, 12, (3, 5))
    a, b = copy.deepcopy(model), copy.deepcopy(model)
    lm.sgd_step(a, x, y, lr=1.0, clip=1e9)
    lm.sgd_step(b, x, y, lr=1.0, clip=1e9, ff_lr=2.0)
    start = dict(model.named_parameters())
    for (name, pa), pb in zip(a.named_parameters(), b.parameters(), strict=True):
        factor = 2.0 if name.split(".")[2:3] in (["linear1"], ["linear2"]) else 1.0
        torch.testing.assert_close(pb - start[name], factor * (pa - start[name]), rtol=1e-5, atol=1e-7)
    assert sum(".linear" in n for n, _ in model.named_parameters()) == 8


def test_bad_arguments_name_the_parameter() -> None:
    with pytest.raises(ValueError, match=names("vocab")):
        lm.TransformerLM(1)
    with pytest.raises(ValueError, match=names("dropout")):
        lm.TransformerLM(10, dropout=1.0)
    with pytest.raises(ValueError, match=names("x")):
        lm.TransformerLM(10, d=4, max_len=3)(torch.zeros(1, 4, dtype=torch.long))
    with pytest.raises(ValueError, match=names("lr")):
        lm.sgd_step(lm.TransformerLM(10, d=4), torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 2,
                                                                                               dtype=torch.long), 0.0)
