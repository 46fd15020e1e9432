"""What a pre-training progress line shows (pretrain/progress.py)."""

from electra_bench.pretrain.progress import training_detail


def test_an_rtd_line_shows_the_generator_and_discriminator_losses_not_their_weighted_sum():
    """Issue 40: RTD's line showed `loss 24.15`, generator + 50 x discriminator, a number nobody can read."""
    metrics = {"loss": 24.15, "gen_loss": 3.45, "disc_loss": 0.4140, "gen_acc": 0.3, "disc_acc": 0.85}
    line = training_detail(5e12, 1.2e13, 2600.0, 0.09, metrics)
    assert line == "5.0e12/1.2e13 FLOPs 2.6k tok/s MFU 9% gen loss 3.45 disc loss 0.414"
    assert "24.15" not in line


def test_a_single_loss_objective_shows_its_loss():
    line = training_detail(5e12, 1.2e13, 2600.0, 0.09, {"loss": 6.21, "mlm_loss": 6.21, "mlm_acc": 0.1})
    assert line == "5.0e12/1.2e13 FLOPs 2.6k tok/s MFU 9% loss 6.21"
    # the ablations that add an MLM loss to the generator's show both terms
    assert training_detail(1e12, 2e12, 0.0, None, {"loss": 9.0, "gen_loss": 4.0, "mlm_loss": 5.0}).endswith(
        "gen loss 4.00 mlm loss 5.00")
