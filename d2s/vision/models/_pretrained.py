"""The one answer to `pretrained=True`: d2s ships no weights and fetches
nothing, because nothing read from a file or the network may become code or
parameters behind the user's back. The error says what to write instead."""


def check_pretrained(pretrained, arch):
    """Raise for `pretrained=True` so a ported script never trains or predicts
    with random weights it believes are ImageNet's."""
    if pretrained:
        raise ValueError(
            f"d2s.vision.models.{arch}(pretrained=True): d2s ships no pretrained weights "
            f"and downloads nothing. Build the model with pretrained=False and load "
            f"the weights yourself: model.set_state_dict(d2s.load('{arch}.pdparams')) "
            f"(parameter names follow paddle.vision.models.{arch}).")
