"""Tiny hparams (overrides of each bundled model's "small" size) so a step builds in well
under a second; shared by the model unit and conformance tests."""

TINY = {
    "lstm": dict(batch=4, hidden=8, layers=2, time_steps=3, input_size=6, classes=3, learning_rate=0.5),
    "phased_lstm": dict(batch=4, hidden=8, layers=2, time_steps=4, input_size=6, classes=3, learning_rate=0.5,
                        tau_max=4.0, r_on=0.3),
    "pathnet": dict(batch=4, width=8, layers=2, modules=3, active=2, max_depth=2, classes=3, learning_rate=0.2),
    "googlenet": dict(batch=2, image=16, width=0.0625, modules=3, classes=3, learning_rate=0.05),
}
